package embedded

import (
	"context"
	"database/sql"
	"errors"
)

// stmts are the statements of the calls made on every turn, prepared once
// at Open: compiling a statement's SQL costs about as much as running it.
// Inside a write transaction a statement is used through tx.StmtContext,
// which reuses its compiled form on the transaction's connection and
// compiles it once more only on a connection that has not run it yet.
// Rarely run statements (the schema, the import, the expiry sweep, List,
// the jobs' calls but their poll, and the manifests' but a file's) are
// compiled when they run.
type stmts struct {
	get, live, upsertRecord, extend, appendTurn, loadTurns *sql.Stmt

	purgeTurns, purgeAnswers, purgeSession *sql.Stmt

	dropAnswer, answerBytes, oldestAnswers, dropOldAnswers, putAnswer, getAnswer *sql.Stmt

	takeLease, deleteLease, renewLease *sql.Stmt

	// A job's poll (jobs.go): a waiter asks for its version four times a
	// second.
	jobGet, jobVersion *sql.Stmt

	// A file search index's calls (manifests.go): a PutFile a file
	// indexed, 20,000 of them for a large root.
	mfID, mfHead, mfFiles, mfSetFile, mfAddFile, mfDelFile, mfCount *sql.Stmt
}

// list names each statement with its SQL.
func (st *stmts) list() []struct {
	stmt  **sql.Stmt
	query string
} {
	return []struct {
		stmt  **sql.Stmt
		query string
	}{
		{&st.get, getSQL},
		{&st.live, liveSQL},
		{&st.upsertRecord, upsertRecordSQL},
		{&st.extend, extendSQL},
		{&st.appendTurn, appendTurnSQL},
		{&st.loadTurns, loadTurnsSQL},
		{&st.purgeTurns, purgeTurnsSQL},
		{&st.purgeAnswers, purgeAnswersSQL},
		{&st.purgeSession, purgeSessionSQL},
		{&st.dropAnswer, dropAnswerSQL},
		{&st.answerBytes, answerBytesSQL},
		{&st.oldestAnswers, oldestAnswersSQL},
		{&st.dropOldAnswers, dropOldAnswersSQL},
		{&st.putAnswer, putAnswerSQL},
		{&st.getAnswer, getAnswerSQL},
		{&st.takeLease, takeLeaseSQL},
		{&st.deleteLease, deleteLeaseSQL},
		{&st.renewLease, renewLeaseSQL},
		{&st.jobGet, jobGetSQL},
		{&st.jobVersion, jobVersionSQL},
		{&st.mfID, mfIDSQL},
		{&st.mfHead, mfHeadSQL},
		{&st.mfFiles, mfFilesSQL},
		{&st.mfSetFile, mfSetFileSQL},
		{&st.mfAddFile, mfAddFileSQL},
		{&st.mfDelFile, mfDelFileSQL},
		{&st.mfCount, mfCountSQL},
	}
}

// prepare compiles the statements; on failure it closes those it
// compiled.
func (st *stmts) prepare(ctx context.Context, db *sql.DB) error {
	for _, p := range st.list() {
		stmt, err := db.PrepareContext(ctx, p.query)
		if err != nil {
			st.close()
			return err
		}
		*p.stmt = stmt
	}
	return nil
}

// close releases the statements compiled.
func (st *stmts) close() error {
	var err error
	for _, p := range st.list() {
		if *p.stmt != nil {
			err = errors.Join(err, (*p.stmt).Close())
		}
	}
	return err
}

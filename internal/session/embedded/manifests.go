package embedded

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/manifest"
)

// The store keeps file search's manifests (manifest.Manifests) in the
// tables manifests, one row a (root, scope) with its count of files, and
// manifest_files, one row a file. Every process on the file shares them,
// and they outlive the process that wrote them, so that an index cut
// short by a restart resumes. They do not expire: a manifest names its
// File Search store, which only its removal (file search's sweep, after
// its TTL) deletes. Tables that only this version makes (CREATE TABLE IF
// NOT EXISTS, as for the jobs), so that processes of an earlier version
// sharing the file go on as before.

var _ manifest.Keeper = (*Store)(nil)

const (
	mfIDSQL      = `SELECT id, store, files FROM manifests WHERE key = ?`
	mfHeadSQL    = `SELECT id, store, used_at FROM manifests WHERE key = ?`
	mfFilesSQL   = `SELECT path, hash, document FROM manifest_files WHERE manifest = ?`
	mfSetFileSQL = `UPDATE manifest_files SET hash = ?, document = ? WHERE manifest = ? AND path = ?`
	mfAddFileSQL = `INSERT INTO manifest_files (manifest, path, hash, document) VALUES (?, ?, ?, ?)`
	mfDelFileSQL = `DELETE FROM manifest_files WHERE manifest = ? AND path = ?`
	mfCountSQL   = `UPDATE manifests SET files = files + ? WHERE id = ?`
	mfNewSQL     = `INSERT INTO manifests (key, store, used_at, files) VALUES (?, ?, ?, 0)`
	mfUseSQL     = `UPDATE manifests SET used_at = ? WHERE id = ?`
	mfMoveSQL    = `UPDATE manifests SET store = ?, used_at = ?, files = 0 WHERE id = ?`
	mfDropSQL    = `DELETE FROM manifest_files WHERE manifest = ?`
	mfRemoveSQL  = `DELETE FROM manifests WHERE id = ?`
	mfListSQL    = `SELECT key, store, used_at FROM manifests`
)

// Manifests implements manifest.Keeper.
func (s *Store) Manifests() manifest.Manifests { return manifests{s} }

// manifests is the store's manifest.Manifests: a session.Store cannot be
// one itself (both have a Get).
type manifests struct{ s *Store }

// Get implements manifest.Manifests: the record, then its files, in one
// read transaction (a snapshot, which takes no write lock).
func (m manifests) Get(ctx context.Context, key string) (manifest.Record, error) {
	if err := manifest.CheckKey(key); err != nil {
		return manifest.Record{}, err
	}
	rec, err := m.get(ctx, key)
	if err != nil {
		return manifest.Record{Key: key, Files: map[string]manifest.Entry{}}, m.s.dbErr(ctx, "reading a file search manifest", err)
	}
	return rec, nil
}

func (m manifests) get(ctx context.Context, key string) (manifest.Record, error) {
	rec := manifest.Record{Key: key, Files: map[string]manifest.Entry{}}
	tx, err := m.s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return rec, err
	}
	defer tx.Rollback()
	var id, used int64
	err = tx.StmtContext(ctx, m.s.st.mfHead).QueryRowContext(ctx, []byte(key)).Scan(&id, &rec.Store, &used)
	if errors.Is(err, sql.ErrNoRows) {
		return rec, nil
	}
	if err != nil {
		return rec, err
	}
	rec.Used = time.UnixMilli(used)
	rows, err := tx.StmtContext(ctx, m.s.st.mfFiles).QueryContext(ctx, id)
	if err != nil {
		return rec, err
	}
	defer rows.Close()
	for rows.Next() {
		var path string
		var e manifest.Entry
		if err := rows.Scan(&path, &e.Hash, &e.Document); err != nil {
			return rec, err
		}
		rec.Files[path] = e
	}
	return rec, rows.Err()
}

// find returns key's row: its id, store and count of files; ok is false
// when there is none.
func find(ctx context.Context, tx *sql.Tx, st *sql.Stmt, key string) (id int64, store string, files int, ok bool, err error) {
	err = tx.StmtContext(ctx, st).QueryRowContext(ctx, []byte(key)).Scan(&id, &store, &files)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, "", 0, false, nil
	}
	return id, store, files, err == nil, err
}

// SetStore implements manifest.Manifests: one write transaction.
func (m manifests) SetStore(ctx context.Context, key, store string, used time.Time) error {
	return m.set(ctx, key, store, used, false, "")
}

// ReplaceStore implements manifest.Manifests: SetStore's transaction,
// which checks the store it reads.
func (m manifests) ReplaceStore(ctx context.Context, key, old, store string, used time.Time) error {
	return m.set(ctx, key, store, used, true, old)
}

func (m manifests) set(ctx context.Context, key, store string, used time.Time, cas bool, old string) error {
	if err := manifest.CheckStore(key, store); err != nil {
		return err
	}
	return m.s.write(ctx, "writing a file search manifest", func(tx *sql.Tx) error {
		id, cur, _, ok, err := find(ctx, tx, m.s.st.mfID, key)
		switch {
		case err != nil:
			return err
		case cas && cur != old:
			return manifest.TakenError(key, old, cur)
		case !ok:
			_, err = tx.ExecContext(ctx, mfNewSQL, []byte(key), store, ms(used))
		case cur == store:
			_, err = tx.ExecContext(ctx, mfUseSQL, ms(used), id)
		default:
			if _, err = tx.ExecContext(ctx, mfDropSQL, id); err == nil {
				_, err = tx.ExecContext(ctx, mfMoveSQL, store, ms(used), id)
			}
		}
		return err
	})
}

// PutFile implements manifest.Manifests: one write transaction of
// prepared statements, which writes that queue together share.
func (m manifests) PutFile(ctx context.Context, key, path string, e manifest.Entry) error {
	if err := manifest.CheckFile(key, path, e); err != nil {
		return err
	}
	return m.s.write(ctx, "writing a file search manifest", func(tx *sql.Tx) error {
		id, _, files, ok, err := find(ctx, tx, m.s.st.mfID, key)
		if err != nil || !ok {
			return err
		}
		res, err := tx.StmtContext(ctx, m.s.st.mfSetFile).ExecContext(ctx, e.Hash, e.Document, id, path)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			return err
		}
		if files >= manifest.MaxFiles {
			return badInput{manifest.FilesError()}
		}
		if _, err := tx.StmtContext(ctx, m.s.st.mfAddFile).ExecContext(ctx, id, path, e.Hash, e.Document); err != nil {
			return err
		}
		_, err = tx.StmtContext(ctx, m.s.st.mfCount).ExecContext(ctx, 1, id)
		return err
	})
}

// DeleteFile implements manifest.Manifests.
func (m manifests) DeleteFile(ctx context.Context, key, path string) error {
	if err := manifest.CheckPath(key, path); err != nil {
		return err
	}
	return m.s.write(ctx, "writing a file search manifest", func(tx *sql.Tx) error {
		id, _, _, ok, err := find(ctx, tx, m.s.st.mfID, key)
		if err != nil || !ok {
			return err
		}
		res, err := tx.StmtContext(ctx, m.s.st.mfDelFile).ExecContext(ctx, id, path)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		_, err = tx.StmtContext(ctx, m.s.st.mfCount).ExecContext(ctx, -1, id)
		return err
	})
}

// Remove implements manifest.Manifests.
func (m manifests) Remove(ctx context.Context, key string) error {
	if err := manifest.CheckKey(key); err != nil {
		return err
	}
	return m.s.write(ctx, "removing a file search manifest", func(tx *sql.Tx) error {
		id, _, _, ok, err := find(ctx, tx, m.s.st.mfID, key)
		if err != nil || !ok {
			return err
		}
		if _, err := tx.ExecContext(ctx, mfDropSQL, id); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, mfRemoveSQL, id)
		return err
	})
}

// List implements manifest.Manifests.
func (m manifests) List(ctx context.Context) ([]manifest.Record, error) {
	rows, err := m.s.db.QueryContext(ctx, mfListSQL)
	if err != nil {
		return nil, m.s.dbErr(ctx, "listing file search manifests", err)
	}
	defer rows.Close()
	var out []manifest.Record
	for rows.Next() {
		var key []byte
		var r manifest.Record
		var used int64
		if err := rows.Scan(&key, &r.Store, &used); err != nil {
			return nil, m.s.dbErr(ctx, "listing file search manifests", err)
		}
		r.Key, r.Used = string(key), time.UnixMilli(used)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, m.s.dbErr(ctx, "listing file search manifests", err)
	}
	return out, nil
}

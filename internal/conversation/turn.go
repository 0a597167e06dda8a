package conversation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
)

// run is the turn itself, in Do, on a ctx bind made: it
// waits for earlier turns of the same session (in this process, then
// through the store's lease, across processes), refuses a session at
// --max-turns or a new API conversation the store could not keep, runs
// the turn through the backend, reporting progress to c's client when it
// asked for it, and records the session with title (Title of it). It returns
// Gemini's answer, or the backend's error (a *backend.Error), a
// store failure (wrapping session.ErrUnavailable), a *WaitCancelled or
// an error wrapping ErrTurnLimit. When the answer came but the session
// could not be recorded, unsaved is the note to show the caller beside
// it.
func (d *Service) run(ctx context.Context, c Call, call backend.Turn, title string) (res *backend.Answer, unsaved string, err error) {
	if err := d.acc.Identified(c.Who); err != nil {
		return nil, "", err
	}
	p := d.startProgress(ctx, c)
	defer p.finish()
	if p != nil {
		call.Observer = observerOf(p, c.partial)
	}
	if key := sessionKey(call); key != "" {
		unlock, err := d.sessions.Lock(ctx, key, func(ahead int) {
			p.waitingForSession(call.Session, ahead)
		})
		if err != nil {
			return nil, "", &WaitCancelled{call.Session}
		}
		defer unlock()
	}
	if session.IsUUID(call.Session) {
		// The lease is given back once the turn is recorded, so that the
		// next turn, here or in another process, sees it.
		release, err := d.o.Store.Lease(ctx, call.Session)
		if err != nil {
			if ctx.Err() != nil {
				return nil, "", &WaitCancelled{call.Session}
			}
			return nil, "", toolerr.StoreError(err)
		}
		defer release()
		if err := d.checkTurns(ctx, call.Session); err != nil {
			if errors.Is(err, session.ErrUnavailable) {
				return nil, "", err
			}
			return nil, "", turnLimitError{err}
		}
	} else if call.Session == "" && d.family() == config.FamilyAPI {
		// The API backend's conversation lives only in the store: a new
		// chat the store cannot record would be paid for and could never
		// be continued. A read of an id no one has tells whether the
		// store answers, before anything is sent to Gemini.
		if _, _, err := d.o.Store.Get(ctx, session.NewUUID()); err != nil {
			return nil, "", toolerr.StoreError(err)
		}
	}
	start := time.Now()
	res, err = d.runBackend(ctx, call)
	if err != nil {
		d.o.Log.Info("gemini call failed", "dir", call.Dir, "resume", call.Session, "elapsed", time.Since(start), "err", err)
		return nil, "", err
	}
	d.o.Log.Info("gemini call done", "dir", call.Dir, "resume", call.Session, "session", res.SessionID, "via", res.Via, "elapsed", time.Since(start))
	if res.Unsaved != nil {
		// The backend could not keep the turn (the API backend's history
		// in a full or slow store): the record stays as it was, and the
		// caller learns what can still be done.
		return res, d.unkeptNote(res, res.Unsaved), nil
	}
	if res.SessionID != "" && (res.Incomplete == "" || res.IncompleteKept) {
		// A cut answer is not a turn of the session, unless the backend
		// kept it for a next turn to continue.
		turn := session.Turn{Cwd: call.Dir, Model: call.Model, Owner: c.Who.Token, Client: c.Who.Key(), Backend: d.family(),
			Title: Title(title), SystemPrompt: call.SystemPrompt}
		if d.family() == config.FamilyCLI {
			turn.Host = d.o.Host
		}
		// The answer is complete and paid for: it is recorded even when
		// its caller has just gone.
		if _, err := d.o.Store.Touch(context.WithoutCancel(ctx), res.SessionID, turn, d.o.Now()); err != nil {
			d.o.Log.Warn("recording the session", "session", res.SessionID, "err", err)
			unsaved = d.unsavedNote(context.WithoutCancel(ctx), res.SessionID, call.Dir, err)
		}
	}
	return res, unsaved, nil
}

// sessionKey names the session a call continues, for ordering calls on it.
// A new session needs no ordering: no one else knows its id yet. "latest"
// and indexes are ordered per directory, since which session they mean is
// only known to the CLI.
func sessionKey(c backend.Turn) string {
	switch {
	case c.Session == "":
		return ""
	case session.IsUUID(c.Session):
		return "id:" + c.Session
	}
	return "dir:" + c.Dir
}

// unkeptNote tells the caller that the backend answered but could not
// keep the turn (err): a new session cannot be continued at all, a
// continued one goes on without this exchange.
func (d *Service) unkeptNote(res *backend.Answer, err error) string {
	const prefix = "[gemini-mcp-server: the answer above is complete, but "
	const fix = " The server's operator should check the session store (--store, --state-dir; gemini-mcp-server doctor checks it).]"
	if res.SessionID == "" {
		return prefix + "the conversation could not be saved (" + err.Error() + "), so it cannot be continued: " +
			"for a follow-up, start a new chat and give it what it needs of this answer." + fix
	}
	return prefix + "this turn could not be saved (" + err.Error() + "): session " + res.SessionID +
		" goes on from the turn before it, without this exchange, when continued." + fix
}

// unsavedNote tells the caller that the session store failed to record a
// turn, and what still works. It asks the store first: a store that
// answers knows whether the session is recorded (an earlier turn was), and
// one that does not answer (unopened, unreachable) can continue nothing
// until it is back; the server keeps trying to open or reach it.
func (d *Service) unsavedNote(ctx context.Context, id, dir string, err error) string {
	const prefix = "[gemini-mcp-server: the answer above is complete, but "
	const fix = " The server's operator should check the session store (--store, --state-dir; gemini-mcp-server doctor checks it).]"
	_, known, gerr := d.o.Store.Get(ctx, id)
	switch {
	case gerr != nil:
		how := " The Gemini CLI keeps the conversation in its own files: once the store is back (the server keeps trying to reach it), chat-reply with sessionId " +
			id + " together with cwd " + dir + " continues it."
		if d.family() != config.FamilyCLI || d.acc.Scoped() {
			how = ""
		}
		return prefix + "this turn was NOT saved: the session store is unavailable (" + err.Error() + "), so chat-reply cannot continue session " + id +
			" now." + how + fix
	case known:
		return prefix + "this turn could not be recorded (" + err.Error() + "). Continuing with sessionId " + id +
			" still works; chat-reply without sessionId may pick another session." + fix
	}
	how := " To continue it, pass sessionId " + id + " together with cwd " + dir + "."
	if d.acc.Scoped() {
		how = " It cannot be continued through this server."
	}
	return prefix + "the session could not be saved (" + err.Error() + "), so chat-reply does not know sessionId " + id + "." + how + fix
}

// checkTurns refuses to continue session id once it has reached
// --max-turns: a conversation cannot grow without bound in the store, and
// each turn resends or rereads all the ones before it. It reads the
// record under the session's lease, not the one read when the session was
// chosen: a turn of another process may have run in between, and turns
// of several replicas waiting for one another's lease must not each pass
// one short of the limit.
func (d *Service) checkTurns(ctx context.Context, id string) error {
	rec, ok, err := d.o.Store.Get(ctx, id)
	if err != nil {
		return toolerr.StoreError(err)
	}
	if ok && rec.Turns >= d.o.MaxTurns {
		return fmt.Errorf("session %s has reached the limit of %d turns (--max-turns): start a new session with chat, "+
			"giving it what it needs of this conversation (ask for a summary first if it helps), or ask the server's operator to raise --max-turns", id, d.o.MaxTurns)
	}
	return nil
}

// titleChars is about how long a session's title is.
const titleChars = 60

// Title is what the sessions tool shows of a session: the opening words
// of its first prompt, on one line, whole words up to about 60 characters,
// with "…" when the prompt goes on.
func Title(prompt string) string {
	words := strings.Fields(prompt)
	var b strings.Builder
	for i, w := range words {
		if b.Len() > 0 && utf8.RuneCountInString(b.String())+1+utf8.RuneCountInString(w) > titleChars {
			return b.String() + " …"
		}
		if b.Len() == 0 && utf8.RuneCountInString(w) > titleChars {
			// One long word (a URL, a path): its start.
			r := []rune(w)
			return string(r[:titleChars]) + "…"
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return b.String()
}

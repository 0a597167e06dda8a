package tools

import (
	"context"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// This file lends the session handling of chat and chat-reply to tools
// registered by other packages (the expert tools of internal/expert), so
// that a session continues the same way whichever tool continues it: the
// same ownership, backend-family and host checks, the same ordering of
// turns on one session, and the same records.

// ErrWaitCancelled is returned by Answer when the call ended while it
// waited for an earlier call on the same session.
var ErrWaitCancelled = errors.New("the call was cancelled while waiting for an earlier call on the same session")

// ErrTurnLimit is wrapped by Answer's error when the session has reached
// --max-turns.
var ErrTurnLimit = errors.New("the session has reached its turn limit")

// Continue points call at session sessionID (a sessionId of an earlier
// result) as chat-reply does when given that sessionId without cwd: the
// recorded session's directory and, on the API backend, its system prompt
// when call has none. A session store failure wraps
// session.ErrUnavailable; any other error means the id cannot be continued
// by this client, and says why.
func (d *Deps) Continue(ctx context.Context, req *mcp.CallToolRequest, call *backend.Turn, sessionID string) error {
	return d.target(ctx, call, sessionID, "", d.clientOf(req))
}

// ResolveDir is the directory a new session runs in: dir (or, when empty,
// the server's directory) after resolving symlinks, refused outside the
// allowed roots.
func (d *Deps) ResolveDir(dir string) (string, error) { return d.resolveCwd(dir) }

// Answer runs call the way chat and chat-reply do (ended with the server's
// lifetime and the HTTP request, with progress reports, ordered after
// earlier calls on the same session, within --max-turns) and records the
// session with title. It returns Gemini's answer, or the backend's error
// (a *backend.Error), a store failure (wrapping session.ErrUnavailable),
// ErrWaitCancelled or an error wrapping ErrTurnLimit. When the answer came
// but the session could not be recorded, unsaved is the note to show the
// caller beside it.
func (d *Deps) Answer(ctx context.Context, req *mcp.CallToolRequest, call backend.Turn, title string) (ans *backend.Answer, unsaved string, err error) {
	ctx, cancel := d.callContext(ctx, req)
	defer cancel()
	p := startProgress(ctx, req, d.ProgressInterval)
	defer p.finish()
	return d.answer(ctx, req, call, title, p)
}

// turnLimitError is a refusal at --max-turns: its message says what to
// do, and it matches ErrTurnLimit.
type turnLimitError struct{ error }

func (turnLimitError) Is(target error) bool { return target == ErrTurnLimit }

// answer is what chat, chat-reply and the expert tools share of a turn:
// it waits for earlier turns of the same session (in this process, then
// through the store's lease, across processes), refuses a session at
// --max-turns or a new API conversation the store could not keep, runs
// the turn with p reporting progress, and records the session. Its errors
// are Answer's.
func (d *Deps) answer(ctx context.Context, req *mcp.CallToolRequest, call backend.Turn, title string, p *progress) (res *backend.Answer, unsaved string, err error) {
	if p != nil {
		call.Observer = p
	}
	if key := sessionKey(call); key != "" {
		unlock, err := d.sessions.Lock(ctx, key, func(ahead int) { p.waitingForSession(call.Session, ahead) })
		if err != nil {
			return nil, "", ErrWaitCancelled
		}
		defer unlock()
	}
	if session.IsUUID(call.Session) {
		// The lease is given back once the turn is recorded, so that the
		// next turn, here or in another process, sees it.
		release, err := d.Store.Lease(ctx, call.Session)
		if err != nil {
			if ctx.Err() != nil {
				return nil, "", ErrWaitCancelled
			}
			return nil, "", storeError(err)
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
		if _, _, err := d.Store.Get(ctx, session.NewUUID()); err != nil {
			return nil, "", storeError(err)
		}
	}
	start := time.Now()
	res, err = d.Backend.Run(ctx, call)
	if err != nil {
		d.Log.Info("gemini call failed", "dir", call.Dir, "resume", call.Session, "elapsed", time.Since(start), "err", err)
		return nil, "", err
	}
	d.Log.Info("gemini call done", "dir", call.Dir, "resume", call.Session, "session", res.SessionID, "via", res.Via, "elapsed", time.Since(start))
	if res.Unsaved != nil {
		// The backend could not keep the turn (the API backend's history
		// in a full or slow store): the record stays as it was, and the
		// caller learns what can still be done.
		return res, d.unkeptNote(res, res.Unsaved), nil
	}
	if res.SessionID != "" && res.Incomplete == "" {
		// A cut answer is not a turn of the session.
		who := d.clientOf(req)
		turn := session.Turn{Cwd: call.Dir, Model: call.Model, Owner: who.token, Client: who.key(), Backend: d.family(),
			Title: Title(title), SystemPrompt: call.SystemPrompt}
		if d.family() == config.FamilyCLI {
			turn.Host = d.Host
		}
		// The answer is complete and paid for: it is recorded even when
		// its caller has just gone.
		if _, err := d.Store.Touch(context.WithoutCancel(ctx), res.SessionID, turn, d.Now()); err != nil {
			d.Log.Warn("recording the session", "session", res.SessionID, "err", err)
			unsaved = d.unsavedNote(context.WithoutCancel(ctx), res.SessionID, call.Dir, err)
		}
	}
	return res, unsaved, nil
}

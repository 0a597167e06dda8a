package access

import (
	"context"
	"errors"
	"fmt"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/identity"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/validate"
)

// Place is where a turn runs: the session it continues and its
// directory; and the system prompt a recorded API session started with,
// for a turn that gives none.
type Place struct {
	Session, Dir string
	SystemPrompt string
}

// Target decides which session a turn continues (chat-reply's, or any
// tool's continuation_id) and where it runs.
//
//   - A UUID this server recorded runs in its recorded cwd. A cwd that
//     names another directory is an error: the CLI could not find the
//     session there. An API session's cwd binds nothing (see
//     checkRecordedDir): a cwd given with it is checked, then ignored.
//   - A UUID this server never saw needs cwd: it may be a session a person
//     started with the CLI, and only its directory can find it.
//   - "latest" and indexes mean what they mean to the CLI, in cwd (or the
//     server's directory).
//   - No sessionId means the session this server used most recently (in
//     cwd, when cwd is given), so that a person's own interactive session
//     is not continued by surprise. Only when this server has none does it
//     fall back to the CLI's "latest", as the tool specification says.
//
// Over HTTP, several clients share the server: "most recently" means this
// client's most recent, a session started with another bearer token is
// unknown, and with tokens the CLI's own references are refused, unless
// the operator shares sessions (see owners.go).
//
// A recorded session of the CLI backends runs only on the host that
// recorded it: its files are there. A recorded session of the API backend
// keeps the system prompt it started with when the reply gives none: the
// API remembers nothing, so the server sends it again.
func (r *Rules) Target(ctx context.Context, sessionID, cwd string, who identity.Who) (Place, error) {
	if err := r.Identified(who); err != nil {
		return Place{}, err
	}
	var dir string
	if cwd != "" {
		var err error
		if dir, err = r.ResolveDir(cwd); err != nil {
			return Place{}, err
		}
	}
	if sessionID == "" {
		var rec session.Record
		var ok bool
		var err error
		if r.Remote {
			if rec, ok, err = r.latestOf(ctx, who, dir); err != nil {
				return Place{}, err
			}
		} else if rec, ok, err = session.Latest(ctx, r.Store, r.continuableFilter(session.Filter{Cwd: dir})); err != nil {
			return Place{}, toolerr.StoreError(err)
		}
		if ok {
			return r.recorded(rec)
		}
		if r.Family() != config.FamilyCLI {
			return Place{}, errors.New("there is no session to continue yet: start one with chat, or pass the sessionId of an earlier result")
		}
		p := Place{Session: "latest"}
		if dir == "" {
			var err error
			if dir, err = r.ResolveDir(""); err != nil {
				return Place{}, err
			}
		}
		p.Dir = dir
		return p, nil
	}
	ref, err := session.ParseSessionRef(sessionID)
	if err != nil {
		return Place{}, err
	}
	p := Place{Session: ref.Value}
	if ref.Kind != session.RefUUID && r.Family() != config.FamilyCLI {
		return Place{}, fmt.Errorf("sessionId %q names a Gemini CLI session, which %s cannot continue: pass the sessionId of an earlier chat or chat-reply result", sessionID, config.FamilyName(r.Family()))
	}
	if ref.Kind != session.RefUUID {
		if r.Scoped() {
			return Place{}, fmt.Errorf("sessionId %q could name another client's session: pass the sessionId of an earlier chat or chat-reply result; %w", sessionID, errScoped)
		}
		if dir == "" {
			if dir, err = r.ResolveDir(""); err != nil {
				return Place{}, err
			}
		}
		p.Dir = dir
		return p, nil
	}
	rec, ok, err := r.Store.Get(ctx, ref.Value)
	if err != nil {
		return Place{}, toolerr.StoreError(err)
	}
	if !ok {
		// Not recorded: its turns are not counted here.
		rec = session.Record{ID: ref.Value}
	}
	if ok && !r.mayUse(rec, who) || !ok && r.Scoped() {
		// Another token's session is as unknown as one never recorded.
		r.Log.Info("refused a session of another client", "id", ref.Value, "recorded", ok)
		return Place{}, fmt.Errorf("unknown sessionId %s: this server has no record of it for this client. Use a sessionId from an earlier chat result; %w", ref.Value, errScoped)
	}
	if ok && rec.Family() != r.Family() {
		return Place{}, fmt.Errorf("session %s was started on %s, and this server runs %s: the two keep separate histories, so one cannot continue the other's session. "+
			"Start a new session with chat, or continue this one on a server run with the backend that started it",
			ref.Value, config.FamilyName(rec.Family()), config.FamilyName(r.Family()))
	}
	if ok && rec.Family() == config.FamilyCLI && rec.Host != "" && rec.Host != r.Host {
		return Place{}, fmt.Errorf("session %s was started on host %s, and this server runs on %s: the Gemini CLI keeps a session's files on the host that ran it, so only a server on %s can continue it. "+
			"Continue it there, or start a new session with chat", ref.Value, rec.Host, r.Host, rec.Host)
	}
	switch {
	case ok && dir != "" && dir != rec.Cwd && rec.Family() == config.FamilyCLI:
		return Place{}, fmt.Errorf("session %s was started in %s, not %s; the Gemini CLI can only resume a session in the directory it was started in: omit cwd or pass %s",
			ref.Value, rec.Cwd, dir, rec.Cwd)
	case ok:
		return r.recorded(rec)
	case r.Family() != config.FamilyCLI:
		return Place{}, fmt.Errorf("unknown sessionId %s: this server has no record of it. Use a sessionId from an earlier chat result", ref.Value)
	case dir == "":
		return Place{}, fmt.Errorf("unknown sessionId %s: this server has no record of it. Use a sessionId from an earlier chat result, or pass cwd with the directory the session was started in to continue a session started outside this server", ref.Value)
	}
	p.Dir = dir
	return p, nil
}

// continuableFilter is f narrowed to the sessions this server can
// continue: those of its backend's family, and of the CLI's only those
// whose files are on this host.
func (r *Rules) continuableFilter(f session.Filter) session.Filter {
	f.Backend = r.Family()
	if f.Backend == config.FamilyCLI {
		f.Host, f.ByHost = r.Host, true
	}
	return f
}

// recorded is the place of the recorded session rec, in its directory,
// which must still be usable. An API session's reply without a system
// prompt gets the one the session started with: the API backend sends the
// whole conversation each turn, the system prompt included, and a reply
// that dropped it would change the assistant mid-conversation. The CLI
// keeps no system prompt between turns, so there a reply's own applies.
func (r *Rules) recorded(rec session.Record) (Place, error) {
	p := Place{Session: rec.ID, Dir: rec.Cwd}
	if rec.Family() == config.FamilyAPI {
		p.SystemPrompt = rec.SystemPrompt
	}
	return p, r.checkRecordedDir(rec)
}

// checkRecordedDir makes sure a recorded session's directory still exists.
// Its directory is checked against the allowed roots as well: the record
// may predate them, or its directory may since have become a symlink.
//
// A session of the API backend has nothing in its directory: the Gemini
// API uses none, and its files come from the serving replica's project
// root. Its recorded cwd only says where it started, so replicas confined
// to different directories continue each other's sessions.
func (r *Rules) checkRecordedDir(rec session.Record) error {
	if rec.Family() == config.FamilyAPI {
		return nil
	}
	dir, err := validate.ResolveDir(rec.Cwd, "/")
	if err != nil {
		// Not wrapped: the directory check's category is not the call's.
		return fmt.Errorf("session %s belongs to %s, which cannot be used any more: %v", rec.ID, rec.Cwd, err) //nolint:errorlint // see above
	}
	if dir != rec.Cwd {
		return fmt.Errorf("session %s belongs to %s, which now leads to %s; the Gemini CLI can only resume a session in the directory it was started in", rec.ID, rec.Cwd, dir)
	}
	if err := r.checkRoot(rec.Cwd, dir); err != nil {
		return fmt.Errorf("session %s: %w", rec.ID, err)
	}
	return nil
}

// ResolveDir turns a cwd argument (or the default, when empty) into the
// real directory a call runs in, after resolving symlinks, and refuses one
// outside the allowed roots.
func (r *Rules) ResolveDir(cwd string) (string, error) {
	orig := cwd
	if cwd == "" {
		orig = r.DefaultCwd
	}
	dir, err := validate.ResolveDir(orig, r.DefaultCwd)
	if err != nil {
		return "", err
	}
	if err := r.checkRoot(orig, dir); err != nil {
		return "", err
	}
	return dir, nil
}

package conversation

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

// place is where a turn runs: the session it continues and its
// directory; the system prompt a recorded API session started with, for
// a turn that gives none; and the session's record when target read it
// (its Turns are checked against --max-turns without reading it again).
type place struct {
	session, dir string
	systemPrompt string
	rec          *session.Record
}

// target decides which session a turn continues (chat-reply's, or any
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
func (d *Service) target(ctx context.Context, sessionID, cwd string, who identity.Who) (place, error) {
	if err := d.identified(who); err != nil {
		return place{}, err
	}
	var dir string
	if cwd != "" {
		var err error
		if dir, err = d.ResolveDir(cwd); err != nil {
			return place{}, err
		}
	}
	if sessionID == "" {
		var rec session.Record
		var ok bool
		var err error
		if d.o.Remote {
			if rec, ok, err = d.latestOf(ctx, who, dir); err != nil {
				return place{}, err
			}
		} else if rec, ok, err = session.Latest(ctx, d.o.Store, d.continuableFilter(session.Filter{Cwd: dir})); err != nil {
			return place{}, toolerr.StoreError(err)
		}
		if ok {
			return d.recorded(rec)
		}
		if d.family() != config.FamilyCLI {
			return place{}, errors.New("there is no session to continue yet: start one with chat, or pass the sessionId of an earlier result")
		}
		p := place{session: "latest"}
		if dir == "" {
			var err error
			if dir, err = d.ResolveDir(""); err != nil {
				return place{}, err
			}
		}
		p.dir = dir
		return p, nil
	}
	ref, err := session.ParseSessionRef(sessionID)
	if err != nil {
		return place{}, err
	}
	p := place{session: ref.Value}
	if ref.Kind != session.RefUUID && d.family() != config.FamilyCLI {
		return place{}, fmt.Errorf("sessionId %q names a Gemini CLI session, which %s cannot continue: pass the sessionId of an earlier chat or chat-reply result", sessionID, config.FamilyName(d.family()))
	}
	if ref.Kind != session.RefUUID {
		if d.scoped() {
			return place{}, fmt.Errorf("sessionId %q could name another client's session: pass the sessionId of an earlier chat or chat-reply result; %w", sessionID, errScoped)
		}
		if dir == "" {
			if dir, err = d.ResolveDir(""); err != nil {
				return place{}, err
			}
		}
		p.dir = dir
		return p, nil
	}
	rec, ok, err := d.o.Store.Get(ctx, ref.Value)
	if err != nil {
		return place{}, toolerr.StoreError(err)
	}
	if !ok {
		// Not recorded: its turns are not counted here.
		rec = session.Record{ID: ref.Value}
	}
	if ok && !d.mayUse(rec, who) || !ok && d.scoped() {
		// Another token's session is as unknown as one never recorded.
		d.o.Log.Info("refused a session of another client", "id", ref.Value, "recorded", ok)
		return place{}, fmt.Errorf("unknown sessionId %s: this server has no record of it for this client. Use a sessionId from an earlier chat result; %w", ref.Value, errScoped)
	}
	if ok && rec.Family() != d.family() {
		return place{}, fmt.Errorf("session %s was started on %s, and this server runs %s: the two keep separate histories, so one cannot continue the other's session. "+
			"Start a new session with chat, or continue this one on a server run with the backend that started it",
			ref.Value, config.FamilyName(rec.Family()), config.FamilyName(d.family()))
	}
	if ok && rec.Family() == config.FamilyCLI && rec.Host != "" && rec.Host != d.o.Host {
		return place{}, fmt.Errorf("session %s was started on host %s, and this server runs on %s: the Gemini CLI keeps a session's files on the host that ran it, so only a server on %s can continue it. "+
			"Continue it there, or start a new session with chat", ref.Value, rec.Host, d.o.Host, rec.Host)
	}
	switch {
	case ok && dir != "" && dir != rec.Cwd && rec.Family() == config.FamilyCLI:
		return place{}, fmt.Errorf("session %s was started in %s, not %s; the Gemini CLI can only resume a session in the directory it was started in: omit cwd or pass %s",
			ref.Value, rec.Cwd, dir, rec.Cwd)
	case ok:
		return d.recorded(rec)
	case d.family() != config.FamilyCLI:
		return place{}, fmt.Errorf("unknown sessionId %s: this server has no record of it. Use a sessionId from an earlier chat result", ref.Value)
	case dir == "":
		return place{}, fmt.Errorf("unknown sessionId %s: this server has no record of it. Use a sessionId from an earlier chat result, or pass cwd with the directory the session was started in to continue a session started outside this server", ref.Value)
	}
	p.dir, p.rec = dir, &rec
	return p, nil
}

// family is the family of the backend serving the tools: a session
// belongs to the family that started it.
func (d *Service) family() config.Family { return d.o.Backend.Family() }

// continuableFilter is f narrowed to the sessions this server can
// continue: those of its backend's family, and of the CLI's only those
// whose files are on this host.
func (d *Service) continuableFilter(f session.Filter) session.Filter {
	f.Backend = d.family()
	if f.Backend == config.FamilyCLI {
		f.Host, f.ByHost = d.o.Host, true
	}
	return f
}

// recorded is the place of the recorded session rec, in its directory,
// which must still be usable. An API session's reply without a system
// prompt gets the one the session started with: the API backend sends the
// whole conversation each turn, the system prompt included, and a reply
// that dropped it would change the assistant mid-conversation. The CLI
// keeps no system prompt between turns, so there a reply's own applies.
func (d *Service) recorded(rec session.Record) (place, error) {
	p := place{session: rec.ID, dir: rec.Cwd, rec: &rec}
	if rec.Family() == config.FamilyAPI {
		p.systemPrompt = rec.SystemPrompt
	}
	return p, d.checkRecordedDir(rec)
}

// checkRecordedDir makes sure a recorded session's directory still exists.
// Its directory is checked against the allowed roots as well: the record
// may predate them, or its directory may since have become a symlink.
//
// A session of the API backend has nothing in its directory: the Gemini
// API uses none, and its files come from the serving replica's project
// root. Its recorded cwd only says where it started, so replicas confined
// to different directories continue each other's sessions.
func (d *Service) checkRecordedDir(rec session.Record) error {
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
	if err := d.checkRoot(rec.Cwd, dir); err != nil {
		return fmt.Errorf("session %s: %w", rec.ID, err)
	}
	return nil
}

// ResolveDir turns a cwd argument (or the default, when empty) into the
// real directory a call runs in, after resolving symlinks, and refuses one
// outside the allowed roots.
func (d *Service) ResolveDir(cwd string) (string, error) {
	orig := cwd
	if cwd == "" {
		orig = d.o.DefaultCwd
	}
	dir, err := validate.ResolveDir(orig, d.o.DefaultCwd)
	if err != nil {
		return "", err
	}
	if err := d.checkRoot(orig, dir); err != nil {
		return "", err
	}
	return dir, nil
}

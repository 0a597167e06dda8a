package access

import (
	"context"
	"errors"
	"fmt"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/identity"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
)

// mayUse reports whether c may continue the recorded session rec: over HTTP,
// a session started with a token belongs to that token unless the
// operator shares sessions. Records without an owner (stdio, HTTP without
// tokens, older records) are open to all, as they always were.
func (r *Rules) mayUse(rec session.Record, c identity.Who) bool {
	return r.usable(session.Filter{}, c).Match(rec)
}

// MayRead reports whether c may read what a session of owner keeps
// beside its record (the pages of its long answers): whoever may
// continue such a session.
func (r *Rules) MayRead(owner string, c identity.Who) bool {
	return r.mayUse(session.Record{Owner: owner}, c)
}

// usable is f narrowed to the sessions mayUse lets c continue.
func (r *Rules) usable(f session.Filter, c identity.Who) session.Filter {
	if r.Remote && !r.ShareSessions {
		f.Owner, f.ByOwner = c.Token, true
	}
	return f
}

// Scoped reports whether references that the CLI resolves on its own
// ("latest", indexes, ids this server never recorded) are refused: over
// HTTP with tokens, they could name another client's session.
func (r *Rules) Scoped() bool {
	return r.Remote && r.Authenticated && !r.ShareSessions
}

// Identified refuses a call over HTTP with tokens (static or OAuth) that
// names no token. Every request there presents one, and each transport
// hands its caller down to the tools (see identity.Of), so such a call would
// be a fault of the server's own wiring; the session it started would
// have no owner and be open to every client.
func (r *Rules) Identified(c identity.Who) error {
	if r.Remote && r.Authenticated && c.Token == "" {
		if r.Log != nil {
			r.Log.Error("refused a call over HTTP with tokens that names no token: its transport did not pass its caller on", "caller", c.Caller)
		}
		return ErrUnidentified
	}
	return nil
}

// ErrUnidentified is Identified's refusal.
var ErrUnidentified = errors.New("this server requires a bearer token, and could not tell which token this call came with; nothing was run: report this to the server's operator")

var errScoped = errors.New("this server continues only sessions that this client started through it (the operator can allow others with --share-sessions)")

// latestOf is chat-reply's session when no sessionId is given, for a
// remote client: the newest session this client used.
func (r *Rules) latestOf(ctx context.Context, c identity.Who, dir string) (session.Record, bool, error) {
	key := c.Key()
	if key == "" {
		return session.Record{}, false, errors.New("without sessionId, chat-reply continues this client's most recent session, but this server cannot tell its clients apart (stateless HTTP, or the SSE transport, without tokens): pass the sessionId of an earlier chat or chat-reply result")
	}
	rec, ok, err := session.Latest(ctx, r.Store, r.continuableFilter(r.usable(session.Filter{Client: key, Cwd: dir}, c)))
	if err != nil {
		return session.Record{}, false, toolerr.StoreError(err)
	}
	if !ok && !r.ShareSessions {
		where := ""
		if dir != "" {
			where = " in " + dir
		}
		return session.Record{}, false, fmt.Errorf("this client has no session%s to continue yet: start one with chat, or pass the sessionId of an earlier result", where)
	}
	return rec, ok, nil
}

// Sessions lists, newest first, the sessions who may continue (on stdio
// all of them, over HTTP those mayUse allows: its own, unless the
// operator shares sessions), in cwd when cwd is given; more says whether
// more follow.
func (r *Rules) Sessions(ctx context.Context, who identity.Who, cwd string, offset, limit int) (recs []session.Record, more bool, err error) {
	if err := r.Identified(who); err != nil {
		return nil, false, err
	}
	var dir string
	if cwd != "" {
		if dir, err = r.ResolveDir(cwd); err != nil {
			return nil, false, err
		}
	}
	recs, more, err = r.Store.List(ctx, r.usable(session.Filter{Cwd: dir, Offset: offset, Limit: limit}, who))
	if err != nil {
		return nil, false, toolerr.StoreError(err)
	}
	return recs, more, nil
}

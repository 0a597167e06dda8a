package tools

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// ClientHeader carries, from the HTTP server's auth check to the tools, a
// non-secret id of the bearer token a request presented. The auth check
// deletes any value a client sends, so the tools can trust it.
const ClientHeader = "X-Gemini-Mcp-Server-Client"

// client is who a call comes from, as far as the transport tells.
type client struct {
	token   string // the id of its bearer token, if any
	session string // its MCP session id, when sessions are stateful
}

func (d *Deps) clientOf(req *mcp.CallToolRequest) client {
	var c client
	if !d.Remote || req == nil {
		return c
	}
	if req.Extra != nil && req.Extra.Header != nil {
		c.token = req.Extra.Header.Get(ClientHeader)
	}
	// A stateless server makes up a session id per request (or takes the
	// client's word for it): it names no one.
	if req.Session != nil && !d.Stateless {
		c.session = req.Session.ID()
	}
	return c
}

// key names the client in session records ("" when it cannot be told
// apart from others).
func (c client) key() string {
	switch {
	case c.token != "":
		return "token:" + c.token
	case c.session != "":
		return "mcp:" + c.session
	}
	return ""
}

// mayUse reports whether c may continue the recorded session r: over HTTP,
// a session started with a token belongs to that token unless the
// operator shares sessions. Records without an owner (stdio, HTTP without
// tokens, older records) are open to all, as they always were.
func (d *Deps) mayUse(r session.Record, c client) bool {
	return d.usable(session.Filter{}, c).Match(r)
}

// usable is f narrowed to the sessions mayUse lets c continue.
func (d *Deps) usable(f session.Filter, c client) session.Filter {
	if d.Remote && !d.ShareSessions {
		f.Owner, f.ByOwner = c.token, true
	}
	return f
}

// scoped reports whether references that the CLI resolves on its own
// ("latest", indexes, ids this server never recorded) are refused: over
// HTTP with tokens, they could name another client's session.
func (d *Deps) scoped() bool {
	return d.Remote && d.Authenticated && !d.ShareSessions
}

var errScoped = errors.New("this server continues only sessions that this client started through it (the operator can allow others with --share-sessions)")

// latestOf is chat-reply's session when no sessionId is given, for a
// remote client: the newest session this client used.
func (d *Deps) latestOf(ctx context.Context, c client, dir string) (session.Record, bool, error) {
	key := c.key()
	if key == "" {
		return session.Record{}, false, errors.New("without sessionId, chat-reply continues this client's most recent session, but this server cannot tell its clients apart (stateless HTTP without tokens): pass the sessionId of an earlier chat or chat-reply result")
	}
	rec, ok, err := session.Latest(ctx, d.Store, d.continuableFilter(d.usable(session.Filter{Client: key, Cwd: dir}, c)))
	if err != nil {
		return session.Record{}, false, storeError(err)
	}
	if !ok && !d.ShareSessions {
		where := ""
		if dir != "" {
			where = " in " + dir
		}
		return session.Record{}, false, fmt.Errorf("this client has no session%s to continue yet: start one with chat, or pass the sessionId of an earlier result", where)
	}
	return rec, ok, nil
}

package conversation

import (
	"context"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A caller is who sends requests to this server, as one identity for
// everything that belongs to someone: the MCP sessions opened over HTTP,
// the rate limits' buckets, the questions put to a user before a
// downstream tool runs and the tools a user allowed for good. It is
//
//   - "token:<id>" over HTTP with bearer tokens, <id> a non-secret id of
//     the static token, or of an OAuth access token's issuer and subject
//     (TokenCaller; TokenOf gives <id> back, the owner of the sessions it
//     starts);
//   - "addr:<ip>" over HTTP without tokens: the remote address of the
//     connection, which behind a reverse proxy is the proxy's (the
//     X-Forwarded-For header is not trusted);
//   - CallerLocal, the one client of stdio.
//
// The HTTP server derives it from each request (and binds a session to
// the caller that opened it) and hands it down in the request's context,
// which the SDK passes on to the handlers of the session's requests: for
// an SSE session, the context of the GET that opened its stream (the
// POSTs that carry its messages, refused unless they come from the same
// caller, have no context of their own); for a Streamable HTTP session,
// that of its initialize; stateless, that of each request. It is the one
// way the tools learn who calls, on every transport.
type callerKey struct{}

// CallerLocal is the caller of stdio, and of requests whose transport
// names no one.
const CallerLocal = "local"

// WithCaller returns ctx carrying caller.
func WithCaller(ctx context.Context, caller string) context.Context {
	return context.WithValue(ctx, callerKey{}, caller)
}

// CallerOf returns the caller of the request handled under ctx.
func CallerOf(ctx context.Context) string {
	if c, ok := ctx.Value(callerKey{}).(string); ok && c != "" {
		return c
	}
	return CallerLocal
}

// DescribeCaller says who caller is, for the user.
func DescribeCaller(caller string) string {
	switch {
	case strings.HasPrefix(caller, "token:"):
		return "every client that uses this client's bearer token"
	case strings.HasPrefix(caller, "addr:"):
		return "every client connecting from " + strings.TrimPrefix(caller, "addr:")
	}
	return "this client"
}

// TokenCaller is the caller of the bearer token (or OAuth subject) whose
// non-secret id is id.
func TokenCaller(id string) string { return "token:" + id }

// TokenOf returns the id of the bearer token caller names (of its
// subject, for an OAuth access token), "" for a caller without a token.
func TokenOf(caller string) string {
	if id, ok := strings.CutPrefix(caller, "token:"); ok {
		return id
	}
	return ""
}

// Who is who a call comes from, as far as the transport tells: resolved
// once, by the tool's handler (Service.CallOf), and passed down as a
// plain value.
type Who struct {
	// Caller is the call's caller (CallerOf): its rate limits, its
	// confirmations and grants.
	Caller string
	// Token is the id of its bearer token (TokenOf its caller) over HTTP,
	// if any: a session started with it belongs to it.
	Token string
	// MCPSession is its MCP session id when sessions are stateful over
	// HTTP.
	MCPSession string
}

// Key names the client in session records ("" when it cannot be told
// apart from others).
func (w Who) Key() string {
	switch {
	case w.Token != "":
		return TokenCaller(w.Token)
	case w.MCPSession != "":
		return "mcp:" + w.MCPSession
	}
	return ""
}

// Call is what the pipeline needs of the MCP request that carries a
// turn: who sent it, where its progress goes and the HTTP request whose
// end ends it. Service.CallOf makes it from the request, in the tool's
// handler; nothing below the handler sees the request itself.
type Call struct {
	Who Who
	// notify sends progress to the client, with token, when it asked for
	// progress (nil otherwise).
	notify func(context.Context, *mcp.ProgressNotificationParams) error
	token  any
	// request is the context of the HTTP request carrying the call (nil
	// if none).
	request context.Context
}

// CallOf resolves the call req makes under ctx.
func (s *Service) CallOf(ctx context.Context, req *mcp.CallToolRequest) Call {
	c := Call{Who: Who{Caller: CallerOf(ctx)}}
	if s.o.Remote {
		c.Who.Token = TokenOf(c.Who.Caller)
	}
	if req == nil {
		return c
	}
	// A stateless server makes up a session id per request (or takes the
	// client's word for it): it names no one.
	if s.o.Remote && req.Session != nil && !s.o.Stateless {
		c.Who.MCPSession = req.Session.ID()
	}
	if req.Params != nil && req.Session != nil {
		if token := req.Params.GetProgressToken(); token != nil {
			c.notify, c.token = req.Session.NotifyProgress, token
		}
	}
	if s.o.RequestContext != nil {
		c.request = s.o.RequestContext(req)
	}
	return c
}

// Package identity says who a call comes from. A caller is who sends
// requests to this server, as one identity for everything that belongs to
// someone: the MCP sessions opened over HTTP, the rate limits' buckets,
// the questions put to a user before a downstream tool runs and the tools
// a user allowed for good. It is
//
//   - "token:<id>" over HTTP with bearer tokens, <id> a non-secret id of
//     the static token, or of an OAuth access token's issuer and subject
//     (ForToken; TokenOf gives <id> back, the owner of the sessions it
//     starts);
//   - "addr:<ip>" over HTTP without tokens (ForAddr): the remote address
//     of the connection, which behind a reverse proxy is the proxy's (the
//     X-Forwarded-For header is not trusted);
//   - Local, the one client of stdio.
//
// The HTTP server derives it from each request (and binds a session to
// the caller that opened it) and hands it down in the request's context
// (With), which the SDK passes on to the handlers of the session's
// requests: for an SSE session, the context of the GET that opened its
// stream (the POSTs that carry its messages, refused unless they come
// from the same caller, have no context of their own); for a Streamable
// HTTP session, that of its initialize; stateless, that of each request.
// Of reads it back: it is the one way the tools learn who calls, on every
// transport.
//
// A handler resolves it once into a Who, a plain value passed down.
//
// # Why not the SDK's TokenInfo
//
// The go-sdk has a carrier of its own for who holds a bearer token:
// auth.RequireBearerToken puts the verifier's auth.TokenInfo in the
// request's context, and the Streamable HTTP transport copies it into each
// request's req.Extra.TokenInfo. The OAuth check is that middleware, and
// the caller of an OAuth token is made from its TokenInfo's UserID (in
// internal/server, at the check). It cannot be the one source of the
// caller, because:
//
//   - a caller without a token has none: RequireBearerToken answers 401
//     to a request without an Authorization header, and only it can put a
//     TokenInfo in a context (the SDK's context key is unexported), so
//     "addr:<ip>" over HTTP without tokens, and Local on stdio, would
//     still need a value of their own: two sources instead of one;
//   - the SSE transport sets no req.Extra at all, and on Streamable HTTP
//     req.Extra is the current POST's while a handler's context is that of
//     the session's initialize; the context is what every transport
//     passes on.
//
// So the caller is one value, set by the HTTP server's check of each
// request (from the SDK's TokenInfo for an OAuth token, from the static
// token's id, or from the connection's address) and read by Of.
package identity

import (
	"context"
	"strings"
)

// callerKey is the context key of the caller.
type callerKey struct{}

// Local is the caller of stdio, and of requests whose transport names no
// one.
const Local = "local"

// With returns ctx carrying caller.
func With(ctx context.Context, caller string) context.Context {
	return context.WithValue(ctx, callerKey{}, caller)
}

// Of returns the caller of the request handled under ctx.
func Of(ctx context.Context) string {
	if c, ok := ctx.Value(callerKey{}).(string); ok && c != "" {
		return c
	}
	return Local
}

// Describe says who caller is, for the user.
func Describe(caller string) string {
	switch {
	case strings.HasPrefix(caller, "token:"):
		return "every client that uses this client's bearer token"
	case strings.HasPrefix(caller, "addr:"):
		return "every client connecting from " + strings.TrimPrefix(caller, "addr:")
	}
	return "this client"
}

// ForToken is the caller of the bearer token (or OAuth subject) whose
// non-secret id is id.
func ForToken(id string) string { return "token:" + id }

// ForAddr is the caller of the requests without a token that come from
// the address host.
func ForAddr(host string) string { return "addr:" + host }

// TokenOf returns the id of the bearer token caller names (of its
// subject, for an OAuth access token), "" for a caller without a token.
func TokenOf(caller string) string {
	if id, ok := strings.CutPrefix(caller, "token:"); ok {
		return id
	}
	return ""
}

// Who is who a call comes from, as far as the transport tells: resolved
// once, by the tool's handler (conversation's Service.CallOf), and passed
// down as a plain value.
type Who struct {
	// Caller is the call's caller (Of): its rate limits, its
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
		return ForToken(w.Token)
	case w.MCPSession != "":
		return "mcp:" + w.MCPSession
	}
	return ""
}

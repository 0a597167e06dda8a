package tools

import (
	"context"
	"strings"
)

// A caller is who sends requests to this server, as one identity for
// everything that belongs to someone: the MCP sessions opened over HTTP,
// the rate limits' buckets, the questions put to a user before a
// downstream tool runs and the tools a user allowed for good. It is
//
//   - "token:<id>" over HTTP with bearer tokens, <id> a non-secret id of
//     the token (the same as ClientHeader's);
//   - "addr:<ip>" over HTTP without tokens: the remote address of the
//     connection, which behind a reverse proxy is the proxy's (the
//     X-Forwarded-For header is not trusted);
//   - CallerLocal, the one client of stdio.
//
// The HTTP server derives it from each request (and binds a session to
// the caller that opened it) and hands it down in the request's context,
// which the SDK passes on to the handlers of the session's requests.
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

// describeCaller says who caller is, for the user.
func describeCaller(caller string) string {
	switch {
	case strings.HasPrefix(caller, "token:"):
		return "every client that uses this client's bearer token"
	case strings.HasPrefix(caller, "addr:"):
		return "every client connecting from " + strings.TrimPrefix(caller, "addr:")
	}
	return "this client"
}

package server

import (
	"context"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Inflight counts the work that shutdown must let finish: tool calls (so
// that their CLIs are reaped and their temp files removed) and the HTTP
// requests that carry their answers back.
type Inflight struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to 0; nil while n is 0
}

// NewInflight returns an empty counter.
func NewInflight() *Inflight { return &Inflight{} }

func (in *Inflight) add() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.n == 0 {
		in.idle = make(chan struct{})
	}
	in.n++
}

func (in *Inflight) done() {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.n--
	if in.n == 0 {
		close(in.idle)
		in.idle = nil
	}
}

// Wait returns when nothing is in flight, or when ctx ends.
func (in *Inflight) Wait(ctx context.Context) error {
	in.mu.Lock()
	idle := in.idle
	in.mu.Unlock()
	if idle == nil {
		return nil
	}
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wrapHTTP counts the requests that are not long-lived streams: a GET
// opens a stream that only ending the server's contexts ends, while a
// POST or DELETE ends once its messages are answered.
func (in *Inflight) wrapHTTP(next http.Handler) http.Handler {
	if in == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			in.add()
			defer in.done()
		}
		next.ServeHTTP(w, r)
	})
}

// middleware counts tool calls until their answers are written. Over SSE
// an answer travels on the client's stream, not on the POST that carried
// the call, and the SDK writes it after the handler has returned, then
// ends the request's context: that end is what marks the answer sent.
func (in *Inflight) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		in.add()
		// Registered when the handler returns: done runs once ctx ends
		// after that.
		defer func() { context.AfterFunc(ctx, in.done) }()
		return next(ctx, method, req)
	}
}

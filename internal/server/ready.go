package server

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// PathReadyz is the readiness check: 200 while this server can take
// calls, 503 (with the reason) while it cannot or is draining.
const PathReadyz = "/readyz"

// readyTimeout bounds a readiness check's look at the store: a store that
// takes longer is not ready.
const readyTimeout = 2 * time.Second

// ErrDraining is the answer to a new session or call while the server is
// draining: it is stopping, the caller should retry (on another replica).
var ErrDraining = errors.New("the server is shutting down: retry (another replica takes the call; with a shared store the session continues there)")

// Drain is a server's way out: at a stop it first fails readiness (so
// that load balancers stop sending to it), then, a delay later, refuses
// new sessions and calls while those in flight finish.
type Drain struct {
	draining atomic.Bool // /readyz answers 503
	closed   atomic.Bool // new sessions and calls are refused
}

// NewDrain returns a Drain of a server that is serving.
func NewDrain() *Drain { return &Drain{} }

// Draining reports whether the server has begun to stop.
func (d *Drain) Draining() bool { return d != nil && d.draining.Load() }

func (d *Drain) begin() { d.draining.Store(true) }

func (d *Drain) close() {
	d.draining.Store(true)
	d.closed.Store(true)
}

func (d *Drain) refusing() bool { return d != nil && d.closed.Load() }

// wrapHTTP refuses, once closed, what would open a session (a POST to
// /mcp without Mcp-Session-Id, which in stateless mode is every request;
// a GET of /sse) with 503 and Retry-After, which clients and balancers
// retry. Requests of open sessions pass: their calls are refused by
// middleware, their other messages (a cancellation, the end of a
// session) are served.
func (d *Drain) wrapHTTP(next http.Handler) http.Handler {
	if d == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.refusing() && r.Header.Get("Mcp-Session-Id") == "" && r.URL.Query().Get("sessionid") == "" && r.Method != http.MethodDelete {
			w.Header().Set("Retry-After", "1")
			w.Header().Set("Connection", "close")
			http.Error(w, ErrDraining.Error(), http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// middleware refuses, once closed, the tool calls of open sessions.
func (d *Drain) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "tools/call" && d.refusing() {
			return nil, ErrDraining
		}
		return next(ctx, method, req)
	}
}

// NotReady is why a server cannot take calls: Reason, which /readyz
// gives to anyone who asks (it is served without authentication, to load
// balancers), names the part at fault; Err, which only the log gets,
// says what failed, with what addresses and paths that takes.
type NotReady struct {
	Reason string
	Err    error
}

func (e *NotReady) Error() string { return e.Reason + ": " + e.Err.Error() }
func (e *NotReady) Unwrap() error { return e.Err }

// readyz answers the readiness check: draining, then ready (the store
// answers and the backend is usable), each as JSON with a reason when
// not ready. The reason is a NotReady's public one; what failed goes to
// log, once each time it changes, not at every probe.
func readyz(d *Drain, ready func(context.Context) error, version string, log *slog.Logger) http.HandlerFunc {
	var (
		mu   sync.Mutex
		last string // the failure last logged; "" while ready
	)
	logged := func(err error) {
		detail := ""
		if err != nil {
			detail = err.Error()
		}
		mu.Lock()
		changed := detail != last
		last = detail
		mu.Unlock()
		switch {
		case !changed || log == nil:
		case err != nil:
			log.Warn("not ready", "err", err)
		default:
			log.Info("ready again")
		}
	}
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		answer := func(code int, v map[string]string) {
			v["name"], v["version"] = Name, version
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(v)
		}
		if d.Draining() {
			answer(http.StatusServiceUnavailable, map[string]string{"status": "draining", "reason": "the server is shutting down"})
			return
		}
		if ready != nil {
			ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
			defer cancel()
			err := ready(ctx)
			logged(err)
			if err != nil {
				reason := "not ready (the server's log says why)"
				if nr := (*NotReady)(nil); errors.As(err, &nr) {
					reason = nr.Reason + " (the server's log says why)"
				}
				answer(http.StatusServiceUnavailable, map[string]string{"status": "unready", "reason": reason})
				return
			}
		}
		answer(http.StatusOK, map[string]string{"status": "ready"})
	}
}

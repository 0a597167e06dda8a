package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/metrics"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/queue"
)

// Limit runs b's turns at most n at once (n <= 0 means
// config.DefaultMaxConcurrent); further turns wait in arrival order, their
// Observer hearing how many are ahead. The server wraps whichever backend
// serves, once: a warm backend that hands a turn to its one-shot fallback
// does so within the turn's slot, so the slots count turns, not backends.
func Limit(b Backend, n int) Backend {
	if n <= 0 {
		n = config.DefaultMaxConcurrent
	}
	return &limited{Backend: b, slots: queue.NewSem(n)}
}

type limited struct {
	Backend
	slots *queue.Sem
}

// Run holds a slot from before the backend starts anything to after it has
// stopped everything it started. A panic of the backend's (a library's,
// on input nobody foresaw) fails this turn only: the server, and every
// other turn, serve on.
func (l *limited) Run(ctx context.Context, t Turn) (ans *Answer, err error) {
	defer func() {
		if v := recover(); v != nil {
			slog.Error("a backend panicked; the turn failed", "backend", l.Backend.Name(), "panic", v, "stack", string(debug.Stack()))
			ans, err = nil, &Error{Kind: KindFailed, Err: fmt.Errorf("panic: %v", v),
				Reason: fmt.Sprintf("the %s backend failed on this call (%v); the server serves on; try again, and "+
					"report it with the server's log if it recurs", l.Backend.Name(), v)}
		}
	}()
	var queued func(int)
	if t.Observer != nil {
		queued = t.Observer.Queued
	}
	running, done := metrics.BackendQueued()
	defer done()
	release, err := l.slots.Acquire(ctx, queued)
	if err != nil {
		return nil, &Error{Kind: KindCancelled, Err: err,
			Reason: "the call was cancelled while waiting for a free gemini slot (--max-concurrent)"}
	}
	defer release()
	running()
	if t.Observer != nil {
		t.Observer.Started()
	}
	start := time.Now()
	ans, err = l.Backend.Run(ctx, t)
	observe(l.Backend.Name(), t.Model, ans, err, time.Since(start))
	return ans, err
}

// observe records a call in the metrics (when on): its latency by the
// backend that answered (a warm backend's turn that ran one-shot counts as
// oneshot) and outcome, and its tokens.
func observe(name, model string, ans *Answer, err error, d time.Duration) {
	if metrics.Current() == nil {
		return
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
		var e *Error
		switch {
		case errors.As(err, &e) && e.Kind == KindCancelled, errors.Is(err, context.Canceled):
			outcome = "cancelled"
		case errors.As(err, &e) && e.Kind == KindTimeout, errors.Is(err, context.DeadlineExceeded):
			outcome = "timeout"
		}
	}
	if ans != nil {
		switch ans.Via {
		case "warm", "api":
			name = ans.Via
		default:
			name = string(config.BackendOneshot)
		}
	}
	metrics.BackendCall(name, outcome, d)
	if ans != nil && ans.Usage != nil {
		u := ans.Usage
		metrics.Tokens(name, model, u.PromptTokens, u.OutputTokens, u.CachedTokens, u.ThinkingTokens, u.ToolUsePromptTokens)
	}
}

// Unwrap returns the backend that l limits.
func (l *limited) Unwrap() Backend { return l.Backend }

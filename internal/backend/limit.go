package backend

import (
	"context"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/queue"
)

// Limit runs b's turns at most n at once (n <= 0 means
// DefaultMaxConcurrent); further turns wait in arrival order, their
// Observer hearing how many are ahead. The server wraps whichever backend
// serves, once: a warm backend that hands a turn to its one-shot fallback
// does so within the turn's slot, so the slots count turns, not backends.
func Limit(b Backend, n int) Backend {
	if n <= 0 {
		n = DefaultMaxConcurrent
	}
	return &limited{Backend: b, slots: queue.NewSem(n)}
}

// DefaultMaxConcurrent is how many turns run at once unless the server
// says otherwise.
const DefaultMaxConcurrent = 4

type limited struct {
	Backend
	slots *queue.Sem
}

// Run holds a slot from before the backend starts anything to after it has
// stopped everything it started.
func (l *limited) Run(ctx context.Context, t Turn) (*Answer, error) {
	var queued func(int)
	if t.Observer != nil {
		queued = t.Observer.Queued
	}
	release, err := l.slots.Acquire(ctx, queued)
	if err != nil {
		return nil, &Error{Kind: KindCancelled, Err: err,
			Reason: "the call was cancelled while waiting for a free gemini slot (--max-concurrent)"}
	}
	defer release()
	if t.Observer != nil {
		t.Observer.Started()
	}
	return l.Backend.Run(ctx, t)
}

// Unwrap returns the backend that l limits.
func (l *limited) Unwrap() Backend { return l.Backend }

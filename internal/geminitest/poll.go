package geminitest

import (
	"context"
	"fmt"
	"time"
)

// PollEvery is how often Poll asks.
const PollEvery = 20 * time.Millisecond

// Poll asks done every PollEvery until it says so, or ctx ends; the error
// then names what was awaited, and the last error done gave. It is for
// what has no event to wait on: another process's view of things (a
// cluster's state, a balancer's servers, a port that starts answering).
func Poll(ctx context.Context, what string, done func() (bool, error)) error {
	t := time.NewTicker(PollEvery)
	defer t.Stop()
	var last error
	for {
		ok, err := done()
		if ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("waiting for %s: %w (last: %w)", what, ctx.Err(), last)
			}
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
}

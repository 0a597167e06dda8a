package interact

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// WaitOptions set how Wait polls.
type WaitOptions struct {
	// Interval is the time between polls; 5 s when zero. Deep Research
	// runs for minutes: a poll a few seconds apart costs a request and a
	// read of the interaction (its steps grow as it goes).
	Interval time.Duration
	// MaxFailures is how many polls in a row may fail with a passing
	// error (429, 5xx, the network, an answer cut short) before Wait gives
	// up; 10 when zero. The time between them doubles, up to MaxBackoff
	// (1 min when zero).
	MaxFailures int
	MaxBackoff  time.Duration
	// Progress, when set, is called with each result whose status or
	// thought summaries changed since the last, and with the last.
	Progress func(*Result)
}

// Wait polls the interaction of id until it stops (its status is done),
// and returns it as it stopped; a failed, cancelled or cut-short
// interaction is returned with no error (see Result.Err). It ends with
// ctx (returning its cause), with an error that polling again cannot
// mend (the interaction not found, a refused key), or after
// MaxFailures passing errors in a row.
func (c *Client) Wait(ctx context.Context, id string, o WaitOptions) (*Result, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	if o.Interval <= 0 {
		o.Interval = 5 * time.Second
	}
	if o.MaxFailures <= 0 {
		o.MaxFailures = 10
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Minute
	}
	var last *Result
	failures := 0
	for {
		r, err := c.Get(ctx, id)
		delay := o.Interval
		switch {
		case ctx.Err() != nil:
			return last, context.Cause(ctx)
		case err != nil && !passing(err):
			return last, err
		case err != nil:
			failures++
			if failures >= o.MaxFailures {
				return last, fmt.Errorf("interaction %s: %d polls in a row failed, the last: %w", id, failures, err)
			}
			delay = min(o.Interval<<min(failures, 16), o.MaxBackoff)
		default:
			failures = 0
			if o.Progress != nil && (last == nil || changed(last, r) || r.Status.Done()) {
				o.Progress(r)
			}
			last = r
			if r.Status.Done() {
				return r, nil
			}
		}
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return last, context.Cause(ctx)
		}
	}
}

// passing says whether another poll may get past err.
func passing(err error) bool {
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.HTTPStatus == http.StatusTooManyRequests || ae.HTTPStatus == http.StatusRequestTimeout || ae.HTTPStatus >= 500
	}
	return true // the network, an answer cut short or malformed
}

func changed(a, b *Result) bool {
	return a.Status != b.Status || len(a.Thoughts) != len(b.Thoughts) ||
		len(b.Thoughts) > 0 && a.Thoughts[len(a.Thoughts)-1] != b.Thoughts[len(b.Thoughts)-1]
}

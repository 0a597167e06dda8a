package interact

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// script is an in-memory API answering each request with the next of its
// answers (the last one again once they are used up), and noting when.
type script struct {
	mu      sync.Mutex
	answers []answer
	times   []time.Time
}

type answer struct {
	status int
	body   string
}

func (s *script) RoundTrip(req *http.Request) (*http.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.times = append(s.times, time.Now())
	a := s.answers[min(len(s.times), len(s.answers))-1]
	return &http.Response{StatusCode: a.status, Body: io.NopCloser(strings.NewReader(a.body)), Request: req}, nil
}

func scripted(t *testing.T, answers ...answer) (*Client, *script) {
	s := &script{answers: answers}
	c, err := New(Config{APIKey: "k", BaseURL: "http://api.invalid", HTTPClient: &http.Client{Transport: s}})
	if err != nil {
		t.Fatal(err)
	}
	return c, s
}

const (
	queuedJSON  = `{"id":"w","status":"queued"}`
	thoughtJSON = `{"id":"w","status":"in_progress","steps":[{"type":"thought","summary":[{"type":"text","text":"one"}]}]}`
	doneJSON    = `{"id":"w","status":"completed","steps":[{"type":"model_output","content":[{"type":"text","text":"report"}]}]}`
)

func TestWaitPollsToTheEndWithProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s := scripted(t, answer{200, queuedJSON}, answer{200, thoughtJSON}, answer{200, thoughtJSON}, answer{200, doneJSON})
		start := time.Now()
		var seen []Status
		r, err := c.Wait(t.Context(), "w", WaitOptions{Interval: time.Second, Progress: func(r *Result) { seen = append(seen, r.Status) }})
		if err != nil || r.Text != "report" {
			t.Fatalf("%+v %v", r, err)
		}
		if len(seen) != 3 || seen[0] != Queued || seen[1] != InProgress || seen[2] != Completed {
			t.Fatalf("progress %v, want queued, in_progress (once: the second poll changed nothing), completed", seen)
		}
		if len(s.times) != 4 || time.Since(start) != 3*time.Second {
			t.Fatalf("%d polls over %v, want 4 a second apart", len(s.times), time.Since(start))
		}
	})
}

func TestWaitBacksOffPassingErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s := scripted(t, answer{503, `{}`}, answer{429, `{}`}, answer{200, `{"id":"w","status":"in_pro`}, answer{200, doneJSON})
		start := time.Now()
		r, err := c.Wait(t.Context(), "w", WaitOptions{Interval: time.Second, MaxBackoff: 3 * time.Second})
		if err != nil || r.Status != Completed {
			t.Fatalf("%+v %v", r, err)
		}
		// 2 s, 3 s (4 s capped), 3 s (8 s capped) between the polls.
		if len(s.times) != 4 || time.Since(start) != 8*time.Second {
			t.Fatalf("%d polls over %v, want 4 over 8s", len(s.times), time.Since(start))
		}
	})
}

func TestWaitGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s := scripted(t, answer{500, `{"error":{"code":500,"message":"down"}}`})
		_, err := c.Wait(t.Context(), "w", WaitOptions{Interval: time.Second, MaxFailures: 3})
		if err == nil || !strings.Contains(err.Error(), "3 polls in a row failed") || !strings.Contains(err.Error(), "down") || len(s.times) != 3 {
			t.Fatalf("%v after %d polls", err, len(s.times))
		}
		c, s = scripted(t, answer{200, queuedJSON}, answer{404, `{"error":{"code":"NOT_FOUND","message":"gone"}}`})
		last, err := c.Wait(t.Context(), "w", WaitOptions{Interval: time.Second})
		if !errors.Is(err, ErrNotFound) || len(s.times) != 2 || last == nil || last.Status != Queued {
			t.Fatalf("%v after %d polls, last %+v", err, len(s.times), last)
		}
	})
}

func TestWaitEndsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, s := scripted(t, answer{200, queuedJSON})
		ctx, cancel := context.WithTimeout(t.Context(), 92*time.Second)
		defer cancel()
		last, err := c.Wait(ctx, "w", WaitOptions{})
		if !errors.Is(err, context.DeadlineExceeded) || last == nil || len(s.times) != 19 {
			t.Fatalf("%v, last %+v, %d polls (want 19, 5 s apart)", err, last, len(s.times))
		}
	})
}

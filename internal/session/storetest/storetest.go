// Package storetest is the conformance suite of session.Store: every
// implementation runs it from its own tests, so that the embedded store and
// Redis keep the same promises.
//
// The suite never relies on the machine's speed. It waits on events
// (channels, a condition polled until a generous deadline) and, where
// time is the subject (TTL, lease renewal), asserts only what must hold
// whatever the delays: a session must be present when it is checked within
// its TTL of its last turn, and gone eventually afterwards.
package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// deadline bounds every wait for an event that must come: a failure guard
// only, far longer than any healthy run needs.
const deadline = 30 * time.Second

// Run runs the conformance suite against the stores open returns. Each call
// of open must return a new, empty store opened with opts (the suite sets
// TTL and LeaseTTL, and MaxPagedBytes where it matters); the suite closes
// every store it opens.
func Run(t *testing.T, open func(t *testing.T, opts session.Options) session.Store) {
	c := &conformance{open: open}
	t.Run("TouchAndGet", c.touchAndGet)
	t.Run("ConcurrentTouch", c.concurrentTouch)
	t.Run("InvalidIDs", c.invalidIDs)
	t.Run("ListAndLatest", c.listAndLatest)
	t.Run("ListFilters", c.listFilters)
	t.Run("ListExpired", c.listExpired)
	t.Run("Delete", c.delete)
	t.Run("Turns", c.turns)
	t.Run("ConcurrentAppends", c.concurrentAppends)
	t.Run("Answers", c.answers)
	t.Run("AnswerBudget", c.answerBudget)
	t.Run("TTL", c.ttl)
	t.Run("AppendTurnRestartsTTL", c.appendRestartsTTL)
	t.Run("LeaseWaitsForRelease", c.leaseWaits)
	t.Run("LeasesOfOtherSessions", c.leaseOtherIDs)
	t.Run("LeaseCancelled", c.leaseCancelled)
	t.Run("LeaseReleaseTwice", c.leaseReleaseTwice)
	t.Run("LeaseRenewed", c.leaseRenewed)
	t.Run("LeaseClose", c.leaseClose)
}

type conformance struct {
	open func(t *testing.T, opts session.Options) session.Store
}

// defaults are the options of the tests that do not need others.
var defaults = session.Options{TTL: time.Hour, LeaseTTL: 5 * time.Second}

// store opens a store that is closed when the test ends.
func (c *conformance) store(t *testing.T, opts session.Options) session.Store {
	t.Helper()
	s := c.open(t, opts)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// Ids used throughout: lower-case UUIDs, as the store requires.
const (
	idA = "0b1c2d3e-4f50-4a6b-8c7d-8e9fa0b1c2d3"
	idB = "1c2d3e4f-5061-4b7c-9d8e-9fa0b1c2d3e4"
	idC = "2d3e4f50-6172-4c8d-ae9f-a0b1c2d3e4f5"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	t.Cleanup(cancel)
	return ctx
}

// uuid returns the lower-case UUID numbered i, for tests that need many.
func uuid(i int) string {
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
}

// waitGone polls cond until it is true, failing the test after deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	give := time.After(deadline)
	for !cond() {
		select {
		case <-tick.C:
		case <-give:
			t.Fatalf("%s: not after %v", what, deadline)
		}
	}
}

package server

import (
	"log/slog"
	"testing"
	"testing/synctest"
	"time"
)

// TestDrainHurry: closing Hurry ends a drain at once, whether it is in its
// delay or waiting for the calls in flight, and leaves new sessions and
// calls refused; without it the drain waits its delay and timeout out. The
// clock is synctest's.
func TestDrainHurry(t *testing.T) {
	for _, tc := range []struct {
		name  string
		delay time.Duration
		at    time.Duration // when Hurry is closed; 0: never
		want  time.Duration // how long drain takes
	}{
		{"in the delay", time.Minute, 10 * time.Second, 10 * time.Second},
		{"waiting for calls", time.Minute, 90 * time.Second, 90 * time.Second},
		{"no hurry", time.Minute, 0, time.Minute + 10*time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				in, d, hurry := NewInflight(), NewDrain(), make(chan struct{})
				in.add() // a call that does not end
				start := time.Now()
				done := make(chan time.Duration)
				go func() {
					drain(ServeOptions{Log: slog.New(slog.DiscardHandler), Drain: d, Inflight: in, DrainDelay: tc.delay, DrainTimeout: 10 * time.Minute, Hurry: hurry})
					done <- time.Since(start)
				}()
				if tc.at > 0 {
					time.Sleep(tc.at)
					close(hurry)
				}
				if took := <-done; took != tc.want {
					t.Errorf("drain took %v, want %v", took, tc.want)
				}
				if !d.refusing() {
					t.Error("new sessions and calls are not refused after the drain")
				}
			})
		})
	}
}

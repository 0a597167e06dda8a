package leaktest

import (
	"strings"
	"testing"
	"time"
)

// parked says it has started, blocks until release is closed, then says
// it has returned.
func parked(started chan<- struct{}, release <-chan struct{}, done chan<- struct{}) {
	close(started)
	<-release
	close(done)
}

// park starts parked and returns once it runs; closing release ends it,
// and done is closed as it returns.
func park() (release, done chan struct{}) {
	started := make(chan struct{})
	release, done = make(chan struct{}), make(chan struct{})
	go parked(started, release, done)
	<-started
	return release, done
}

func TestFindNamesALeftGoroutine(t *testing.T) {
	settle = 50 * time.Millisecond
	t.Cleanup(func() { settle = 10 * time.Second })
	release, done := park()
	err := Find()
	if err == nil || !strings.Contains(err.Error(), "leaktest.parked") || !strings.Contains(err.Error(), "1 goroutine(s)") {
		t.Errorf("Find with a parked goroutine = %v, want it named", err)
	}
	if err := Find(IgnoreTopFunction("github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/leaktest.parked")); err != nil {
		t.Errorf("Find ignoring its top function = %v, want nil", err)
	}
	close(release)
	<-done
	// Between close(done) and its end the goroutine is still alive: Find
	// waits it out.
	if err := Find(); err != nil {
		t.Errorf("Find after the goroutine returned = %v", err)
	}
}

func TestIgnoreCurrentForgivesWhatWasAlive(t *testing.T) {
	settle = 50 * time.Millisecond
	t.Cleanup(func() { settle = 10 * time.Second })
	release, done := park()
	defer func() { close(release); <-done }()
	ignore := IgnoreCurrent()
	if err := Find(ignore); err != nil {
		t.Errorf("Find(IgnoreCurrent()) = %v", err)
	}
	release2, done2 := park()
	defer func() { close(release2); <-done2 }()
	if err := Find(ignore); err == nil {
		t.Error("Find(IgnoreCurrent()) missed a goroutine started after the snapshot")
	}
}

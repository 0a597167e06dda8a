package leaktest

import (
	"strings"
	"testing"
	"time"
)

// parked blocks until release is closed, then says it has returned.
func parked(release <-chan struct{}, done chan<- struct{}) {
	<-release
	close(done)
}

func TestFindNamesALeftGoroutine(t *testing.T) {
	settle = 50 * time.Millisecond
	t.Cleanup(func() { settle = 10 * time.Second })
	release, done := make(chan struct{}), make(chan struct{})
	go parked(release, done)
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
	release, done := make(chan struct{}), make(chan struct{})
	go parked(release, done)
	defer func() { close(release); <-done }()
	// A goroutine is in the dump from its go statement on, started or not.
	if !strings.Contains(stacks(), "leaktest.parked") {
		t.Fatal("the parked goroutine is not in the stack dump")
	}
	ignore := IgnoreCurrent()
	if err := Find(ignore); err != nil {
		t.Errorf("Find(IgnoreCurrent()) = %v", err)
	}
	release2, done2 := make(chan struct{}), make(chan struct{})
	go parked(release2, done2)
	defer func() { close(release2); <-done2 }()
	if err := Find(ignore); err == nil {
		t.Error("Find(IgnoreCurrent()) missed a goroutine started after the snapshot")
	}
}

func stacks() string {
	var b strings.Builder
	for _, g := range goroutines() {
		b.WriteString(g.stack)
	}
	return b.String()
}

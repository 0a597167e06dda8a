package backend

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// blocking is a backend whose turns wait for release.
type blocking struct{ release chan struct{} }

func (b *blocking) Name() string { return "blocking" }
func (b *blocking) Close()       {}
func (b *blocking) Run(ctx context.Context, t Turn) (*Answer, error) {
	<-b.release
	return &Answer{Text: t.Prompt}, nil
}

// events records what an Observer hears, on a channel.
type events chan string

func (e events) Queued(ahead int) {
	if ahead == 0 {
		e <- "queued"
	}
}
func (e events) Started()        { e <- "started" }
func (e events) Activity(string) {}

// TestLimit: with one slot, a second turn waits (its observer hears it is
// next in line), starts once the first ends, and a turn cancelled while
// waiting fails as cancelled without reaching the backend.
func TestLimit(t *testing.T) {
	t.Parallel()
	b := &blocking{release: make(chan struct{})}
	l := Limit(b, 1)
	first, second := make(events, 4), make(events, 4)
	done := make(chan error, 2)
	go func() { _, err := l.Run(context.Background(), Turn{Prompt: "1", Observer: first}); done <- err }()
	if got := <-first; got != "started" {
		t.Fatalf("first turn: %s", got)
	}
	go func() { _, err := l.Run(context.Background(), Turn{Prompt: "2", Observer: second}); done <- err }()
	if got := <-second; got != "queued" {
		t.Fatalf("second turn: %s, want queued", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	third := make(chan error, 1)
	go func() { _, err := l.Run(ctx, Turn{Prompt: "3"}); third <- err }()
	cancel()
	err := <-third
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindCancelled || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled while waiting: %v", err)
	}
	b.release <- struct{}{}
	if got := <-second; got != "started" {
		t.Fatalf("second turn: %s, want started", got)
	}
	b.release <- struct{}{}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// panicking is a backend whose turns panic.
type panicking struct{}

func (panicking) Name() string { return "panicking" }
func (panicking) Close()       {}
func (panicking) Run(context.Context, Turn) (*Answer, error) {
	panic("unforeseen")
}

// TestLimitRecoversPanic: a backend's panic fails its turn with an error,
// and frees its slot.
func TestLimitRecoversPanic(t *testing.T) {
	t.Parallel()
	l := Limit(panicking{}, 1)
	for range 2 {
		_, err := l.Run(context.Background(), Turn{})
		var be *Error
		if !errors.As(err, &be) || be.Kind != KindFailed || !strings.Contains(be.Reason, "unforeseen") {
			t.Fatalf("error %v", err)
		}
	}
}

// preparing is a backend that records the directories it is told to get
// ready for.
type preparing struct {
	blocking
	dirs []string
}

func (p *preparing) Prepare(dir string) { p.dirs = append(p.dirs, dir) }

// TestPrepareReachesTheWrappedBackend: Prepare finds a Preparer under the
// limit the server wraps every backend in, and leaves a backend that is
// not one alone.
func TestPrepareReachesTheWrappedBackend(t *testing.T) {
	t.Parallel()
	p := &preparing{}
	Prepare(Limit(p, 1), "/work")
	if len(p.dirs) != 1 || p.dirs[0] != "/work" {
		t.Fatalf("Prepare through Limit: %v", p.dirs)
	}
	Prepare(Limit(&blocking{}, 1), "/work") // no Preparer: nothing to do
	Prepare(nil, "/work")
}

package backend

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/metrics"
)

// blocking is a backend whose turns wait for release.
type blocking struct{ release chan struct{} }

func (b *blocking) Name() string          { return "blocking" }
func (b *blocking) Family() config.Family { return config.FamilyCLI }
func (b *blocking) Close()                {}
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

func (panicking) Name() string          { return "panicking" }
func (panicking) Family() config.Family { return config.FamilyCLI }
func (panicking) Close()                {}
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

// usageBackend answers after release, with a token count.
type usageBackend struct{ blocking }

func (b *usageBackend) Run(ctx context.Context, t Turn) (*Answer, error) {
	<-b.release
	return &Answer{Text: t.Prompt, Via: "warm", Usage: &Usage{PromptTokens: 10, OutputTokens: 3, CachedTokens: 4}}, nil
}

// TestLimitMetrics: with metrics on, the running and waiting calls are
// gauged while they run and wait, and each answered call is timed by the
// backend that answered and its tokens counted; a call cancelled while
// waiting leaves the queue and is no backend call. (Not parallel: the
// metrics are the process's.)
func TestLimitMetrics(t *testing.T) {
	set := metrics.New(nil)
	metrics.Enable(set)
	defer metrics.Enable(nil)
	expo := func() string {
		var b strings.Builder
		set.Registry().WriteTo(&b)
		return b.String()
	}
	has := func(lines ...string) {
		t.Helper()
		text := expo()
		for _, l := range lines {
			if !strings.Contains(text, "\n"+l+"\n") {
				t.Errorf("no line %q in:\n%s", l, text)
			}
		}
	}
	b := &usageBackend{blocking{release: make(chan struct{})}}
	l := Limit(b, 1)
	first, second := make(events, 4), make(events, 4)
	done := make(chan error, 2)
	go func() { _, err := l.Run(context.Background(), Turn{Prompt: "1", Observer: first}); done <- err }()
	<-first
	go func() {
		_, err := l.Run(context.Background(), Turn{Prompt: "2", Model: "gemini-2.5-flash", Observer: second})
		done <- err
	}()
	<-second
	has("gemini_mcp_backend_active_calls 1", "gemini_mcp_backend_queued_calls 1")
	ctx, cancel := context.WithCancel(context.Background())
	third := make(chan error, 1)
	go func() { _, err := l.Run(ctx, Turn{Prompt: "3"}); third <- err }()
	cancel()
	<-third
	has("gemini_mcp_backend_active_calls 1", "gemini_mcp_backend_queued_calls 1")
	b.release <- struct{}{}
	<-second
	b.release <- struct{}{}
	for range 2 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	has("gemini_mcp_backend_active_calls 0", "gemini_mcp_backend_queued_calls 0",
		`gemini_mcp_backend_call_duration_seconds_count{backend="warm",outcome="ok"} 2`,
		`gemini_mcp_backend_call_duration_seconds_count{backend="warm",outcome="cancelled"} 0`,
		`gen_ai_client_token_usage_sum{gen_ai_token_type="input",gen_ai_request_model="default",backend="warm"} 10`,
		`gen_ai_client_token_usage_sum{gen_ai_token_type="input",gen_ai_request_model="gemini-2.5-flash",backend="warm"} 10`,
		`gen_ai_client_token_usage_sum{gen_ai_token_type="cached",gen_ai_request_model="default",backend="warm"} 4`,
		`gen_ai_client_token_usage_count{gen_ai_token_type="output",gen_ai_request_model="default",backend="warm"} 1`)
	if strings.Contains(expo(), `gen_ai_token_type="reasoning"`) {
		t.Error("a token count of 0 was recorded")
	}
}

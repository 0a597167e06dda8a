package api

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

type recorder struct {
	mu       sync.Mutex
	started  int
	activity []string
	onAct    func(string)
}

func (r *recorder) Queued(int) {}
func (r *recorder) Started() {
	r.mu.Lock()
	r.started++
	r.mu.Unlock()
}
func (r *recorder) Activity(msg string) {
	r.mu.Lock()
	r.activity = append(r.activity, msg)
	on := r.onAct
	r.mu.Unlock()
	if on != nil {
		on(msg)
	}
}

func TestRetry429ThenSuccess(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	obs := &recorder{}
	prompt := "[[fail:2:429]] [[retry-delay:0.02s]] hello"
	a, err := f.run(backend.Turn{Prompt: prompt, Observer: obs})
	if err != nil {
		t.Fatal(err)
	}
	if want := fakeapi.Answer(newestFlash, 1, "", prompt); a.Text != want {
		t.Fatalf("answer %q", a.Text)
	}
	if n := len(f.streams()); n != 3 {
		t.Fatalf("%d stream requests, want 3", n)
	}
	if obs.started != 1 || len(obs.activity) < 2 || obs.activity[0] != "the Gemini API answered 429; retrying in 20ms" {
		t.Fatalf("observer %+v", obs)
	}
}

func TestRetry429Exhausted(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Retries: 2})
	_, err := f.run(backend.Turn{Prompt: "[[status:429]] [[retry-delay:0.01s]]"})
	wantKind(t, err, backend.KindAPI, 429, "quota or rate limit is exhausted", "RESOURCE_EXHAUSTED", "the API asks to wait 10ms")
	if n := len(f.streams()); n != 3 {
		t.Fatalf("%d stream requests, want 3 (1 + 2 retries)", n)
	}
}

// TestRetryDelayBeyondTimeout: a delay longer than the call has left, or
// than maxRetryWait, is not waited out; the error says how long the API
// asked for.
func TestRetryDelayBeyondTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		timeout time.Duration
		delay   string
		says    string
	}{
		{30 * time.Second, "45s", "wait 45s"},
		{0, "3600s", "wait 1h0m0s"},
	} {
		f := newFixture(t, Options{Timeout: tc.timeout})
		_, err := f.run(backend.Turn{Prompt: "[[status:429]] [[retry-delay:" + tc.delay + "]]"})
		wantKind(t, err, backend.KindAPI, 429, tc.says)
		if n := len(f.streams()); n != 1 {
			t.Fatalf("%d stream requests, want 1", n)
		}
	}
}

func TestRetry500(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	a := f.mustRun(backend.Turn{Prompt: "[[fail:1:500]] hello"})
	if n := len(f.streams()); n != 2 || !strings.Contains(a.Text, "hello") {
		t.Fatalf("%d stream requests, answer %q", n, a.Text)
	}
	_, err := f.run(backend.Turn{Prompt: "[[status:503]]"})
	wantKind(t, err, backend.KindAPI, 503, "kept failing on retry")
}

// TestCancelMidStream cancels a turn while its answer streams in: the
// request ends at once (the fake sees it go) and the conversation is left
// as it was.
func TestCancelMidStream(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	a := f.mustRun(backend.Turn{Prompt: "hi"})

	// The minute is a guard against a hang should no progress come.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	obs := &recorder{onAct: func(string) { cancel() }}
	_, err := f.b.Run(ctx, backend.Turn{Prompt: "[[stall]] [[chunks:3]] go on", Session: a.SessionID, Observer: obs})
	be := wantKind(t, err, backend.KindCancelled, 0, "cancelled")
	if !errors.Is(be, context.Canceled) {
		t.Fatal("the error does not match context.Canceled")
	}
	wctx, wcancel := context.WithTimeout(context.Background(), time.Minute)
	defer wcancel()
	err = f.fake.WaitFor(wctx, func(rs []fakeapi.Request) bool {
		return len(rs) > 0 && rs[len(rs)-1].Ended
	})
	if err != nil {
		t.Fatalf("the fake did not see the request end: %v", err)
	}
	if !strings.HasPrefix(obs.activity[0], "receiving the answer: ") {
		t.Fatalf("activity %q", obs.activity)
	}
	if f.turns(a.SessionID) != 1 {
		t.Fatal("a cancelled turn changed the conversation")
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Timeout: 300 * time.Millisecond})
	_, err := f.run(backend.Turn{Prompt: "[[sleep:600000]]"})
	be := wantKind(t, err, backend.KindTimeout, 0, "did not answer within 300ms", "raise --timeout (GEMINI_MCP_TIMEOUT)")
	if !errors.Is(be, context.DeadlineExceeded) {
		t.Fatal("the error does not match context.DeadlineExceeded")
	}
	wctx, wcancel := context.WithTimeout(context.Background(), time.Minute)
	defer wcancel()
	if err := f.fake.WaitFor(wctx, func(rs []fakeapi.Request) bool { return len(rs) > 1 && rs[len(rs)-1].Ended }); err != nil {
		t.Fatalf("the fake did not see the request end: %v", err)
	}
}

func TestOutputCap(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{MaxOutputBytes: 30})
	_, err := f.run(backend.Turn{Prompt: "[[chunks:4]] a long answer"})
	wantKind(t, err, backend.KindOutputTooBig, 0, "past 30 bytes")
	if n := f.hist.appends.Load(); n != 0 {
		t.Fatalf("a refused answer left %d turns", n)
	}
	// An answer within the cap passes.
	f.restart(Options{MaxOutputBytes: 1000})
	f.mustRun(backend.Turn{Prompt: "[[chunks:4]] a long answer"})
}

// TestNoAutomaticContinuation: the SDK would send a truncated answer's
// request again on its own, billed and outside the call's retries; the
// backend turns that off and takes the answer as it came.
func TestNoAutomaticContinuation(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	a := f.mustRun(backend.Turn{Prompt: "[[continuation]] long"})
	if n := len(f.streams()); n != 1 || !strings.Contains(a.Text, "long") {
		t.Fatalf("%d stream requests, answer %q", n, a.Text)
	}
}

// textRecorder is a recorder that also hears the answer's text.
type textRecorder struct {
	recorder
	texts []string
}

func (r *textRecorder) AnswerSoFar(text string) {
	r.mu.Lock()
	r.texts = append(r.texts, text)
	r.mu.Unlock()
}

// TestAnswerSoFar: an observer that hears the answer's text
// (backend.TextObserver) is told it as it streams: the first half of an
// answer whose stream then stalls, before the turn ends.
func TestAnswerSoFar(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	// The minute is a guard against a hang should no progress come.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	obs := &textRecorder{}
	obs.onAct = func(string) { cancel() }
	prompt := "[[stall]] [[chunks:2]] tell me"
	_, err := f.b.Run(ctx, backend.Turn{Prompt: prompt, Observer: obs})
	wantKind(t, err, backend.KindCancelled, 0, "cancelled")
	whole := fakeapi.Answer(newestFlash, 1, "", prompt)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if len(obs.texts) != 1 || obs.texts[0] == "" || len(obs.texts[0]) >= len(whole) || !strings.HasPrefix(whole, obs.texts[0]) {
		t.Fatalf("the observer heard %q of the answer %q, want its first half", obs.texts, whole)
	}
}

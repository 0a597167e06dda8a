package api

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/leaktest"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

func TestMain(m *testing.M) {
	// The SDK links OpenCensus (through cloud.google.com/go/auth), whose
	// package init starts a worker goroutine that never ends.
	leaktest.VerifyTestMain(m, leaktest.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

// env is the environment a Backend under test reads: a key, and the
// fake's address.
func env(s *fakeapi.Server) func(string) string { return envAt(s.URL()) }

// envAt is the environment of a Backend under test whose API answers at
// url (a hostile server of a test's own).
func envAt(url string) func(string) string {
	return func(k string) string {
		switch k {
		case "GEMINI_API_KEY":
			return "test-key"
		case "GOOGLE_GEMINI_BASE_URL":
			return url
		}
		return ""
	}
}

type fixture struct {
	t    *testing.T
	fake *fakeapi.Server
	hist *countingHist
	b    *Backend
}

// countingHist is the session store, counting the turns appended.
type countingHist struct {
	*memstore.Store
	appends atomic.Int64
}

func (c *countingHist) AppendTurn(ctx context.Context, id string, turn json.RawMessage) error {
	c.appends.Add(1)
	return c.Store.AppendTurn(ctx, id, turn)
}

func newFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	f := &fixture{t: t, fake: fakeapi.New(), hist: &countingHist{Store: memstore.New(session.Options{})}}
	t.Cleanup(f.fake.Close)
	t.Cleanup(func() { f.hist.Close() })
	f.restart(opts)
	return f
}

// restart makes a new Backend on the same history, as a restarted server
// does.
func (f *fixture) restart(opts Options) {
	f.t.Helper()
	if f.b != nil {
		f.b.Close()
	}
	if opts.Getenv == nil {
		opts.Getenv = env(f.fake)
	}
	if opts.RetryBackoff == 0 {
		opts.RetryBackoff = 10 * time.Millisecond
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	b, err := New(opts, f.hist, log)
	if err != nil {
		f.t.Fatal(err)
	}
	f.b = b
	f.t.Cleanup(b.Close)
}

func (f *fixture) run(t backend.Turn) (*backend.Answer, error) {
	return f.b.Run(context.Background(), t)
}

func (f *fixture) mustRun(t backend.Turn) *backend.Answer {
	f.t.Helper()
	a, err := f.run(t)
	if err != nil {
		f.t.Fatalf("Run(%q): %v", t.Prompt, err)
	}
	return a
}

// streams returns the stream requests the fake saw.
func (f *fixture) streams() []fakeapi.Request {
	var out []fakeapi.Request
	for _, r := range f.fake.Requests() {
		if r.Method == fakeapi.MethodStream {
			out = append(out, r)
		}
	}
	return out
}

func (f *fixture) turns(id string) int {
	f.t.Helper()
	turns, _, err := f.hist.LoadTurns(context.Background(), id)
	if err != nil {
		f.t.Fatal(err)
	}
	return len(turns)
}

func wantKind(t *testing.T, err error, kind backend.Kind, status int, says ...string) *backend.Error {
	t.Helper()
	var be *backend.Error
	if !errors.As(err, &be) {
		t.Fatalf("error %v (%T) is not a *backend.Error", err, err)
	}
	if be.Kind != kind || be.Status != status {
		t.Fatalf("error kind %s status %d, want %s %d: %s", be.Kind, be.Status, kind, status, be.Reason)
	}
	for _, s := range says {
		if !strings.Contains(be.Reason, s) {
			t.Errorf("error %q does not say %q", be.Reason, s)
		}
	}
	return be
}

func TestNewSessionAndContinuation(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	a := f.mustRun(backend.Turn{Prompt: "first question"})
	if !session.IsUUID(a.SessionID) || a.SessionID != strings.ToLower(a.SessionID) || a.Via != "api" {
		t.Fatalf("answer %+v", a)
	}
	if want := fakeapi.Answer(newestFlash, 1, "", "first question"); a.Text != want {
		t.Fatalf("answer %q, want %q", a.Text, want)
	}
	if f.turns(a.SessionID) != 1 {
		t.Fatal("the first turn was not recorded")
	}

	b := f.mustRun(backend.Turn{Prompt: "second question", Session: strings.ToUpper(a.SessionID)})
	if b.SessionID != a.SessionID {
		t.Fatalf("continued as %s, want %s", b.SessionID, a.SessionID)
	}
	if want := fakeapi.Answer(newestFlash, 3, "", "second question"); b.Text != want {
		t.Fatalf("answer %q, want %q", b.Text, want)
	}
	reqs := f.streams()
	last := reqs[len(reqs)-1]
	var body struct {
		Contents []struct {
			Role  string
			Parts []struct{ Text string }
		}
	}
	if err := json.Unmarshal(last.Body, &body); err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, c := range body.Contents {
		got = append(got, c.Role+": "+c.Parts[0].Text)
	}
	want := []string{"user: first question", "model: " + a.Text, "user: second question"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the fake saw\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if last.Model != newestFlash {
		t.Fatalf("model in the URL %q", last.Model)
	}

	// A new chat is a new conversation.
	c := f.mustRun(backend.Turn{Prompt: "another"})
	if c.SessionID == a.SessionID || !strings.Contains(c.Text, "contents=1") {
		t.Fatalf("new chat %+v", c)
	}
}

func TestContinuationAfterRestart(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	a := f.mustRun(backend.Turn{Prompt: "before the restart"})
	f.restart(Options{})
	b := f.mustRun(backend.Turn{Prompt: "after the restart", Session: a.SessionID})
	if want := fakeapi.Answer(newestFlash, 3, "", "after the restart"); b.Text != want {
		t.Fatalf("answer %q, want %q", b.Text, want)
	}
	if f.turns(a.SessionID) != 2 {
		t.Fatal("the second turn was not recorded")
	}
}

func TestSystemInstructionAndModel(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Model: "gemini-2.5-flash-lite"})
	a := f.mustRun(backend.Turn{Prompt: "hi", SystemPrompt: "be brief"})
	r := f.streams()[0]
	if r.SystemInstruction != "be brief" || r.Model != "gemini-2.5-flash-lite" || !strings.Contains(a.Text, "system=yes") {
		t.Fatalf("request %+v, answer %q", r, a.Text)
	}
	f.mustRun(backend.Turn{Prompt: "hi", Model: "models/gemini-2.5-pro", Session: a.SessionID})
	if r := f.streams()[1]; r.Model != "gemini-2.5-pro" || r.SystemInstruction != "" {
		t.Fatalf("request %+v", r)
	}
}

func TestBadSession(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	_, err := f.run(backend.Turn{Prompt: "hi", Session: "latest"})
	wantKind(t, err, backend.KindSession, 0, `not "latest"`)
	_, err = f.run(backend.Turn{Prompt: "hi", Session: "b9aadb6c-5aca-4c65-b929-02b095cc2b94"})
	wantKind(t, err, backend.KindSession, 0, "no API conversation has id b9aadb6c-5aca-4c65-b929-02b095cc2b94")
	if n := len(f.fake.Requests()); n != 0 {
		t.Fatalf("%d requests for a bad session", n)
	}
}

// TestConcurrentRepliesQueue: two replies to one conversation at once both
// land, one after the other, neither losing the other's turn.
func TestConcurrentRepliesQueue(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	a := f.mustRun(backend.Turn{Prompt: "hi"})
	var wg sync.WaitGroup
	texts := make([]string, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ans, err := f.run(backend.Turn{Prompt: "reply", Session: a.SessionID})
			errs[i] = err
			if err == nil {
				texts[i] = ans.Text
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := []string{texts[0], texts[1]}
	if !(strings.Contains(got[0], "contents=3") && strings.Contains(got[1], "contents=5") ||
		strings.Contains(got[0], "contents=5") && strings.Contains(got[1], "contents=3")) {
		t.Fatalf("answers %q", got)
	}
	if f.turns(a.SessionID) != 3 {
		t.Fatalf("%d turns, want 3", f.turns(a.SessionID))
	}
}

// TestSessionLocksBounded: a conversation's lock exists only while a
// turn holds or awaits it, so a long-lived server keeps no lock per
// conversation it ever served; and a turn waiting for the lock of its
// conversation can be cancelled.
func TestSessionLocksBounded(t *testing.T) {
	f := newFixture(t, Options{})
	a := f.mustRun(backend.Turn{Prompt: "hi"})
	for range 20 {
		f.mustRun(backend.Turn{Prompt: "another"})
	}
	f.mustRun(backend.Turn{Prompt: "reply", Session: a.SessionID})
	if n := f.b.sessions.Len(); n != 0 {
		t.Errorf("%d conversation locks kept after every turn ended", n)
	}

	unlock, err := f.b.sessions.Lock(context.Background(), a.SessionID, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := f.b.Run(ctx, backend.Turn{Prompt: "queued", Session: a.SessionID})
		done <- err
	}()
	cancel()
	wantKind(t, <-done, backend.KindCancelled, 0, "cancelled")
	if f.turns(a.SessionID) != 2 {
		t.Errorf("%d turns after a cancelled reply, want 2", f.turns(a.SessionID))
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	prompt := "three word prompt"
	a := f.mustRun(backend.Turn{Prompt: prompt, ThinkingMode: "low"})
	want := backend.Usage{PromptTokens: 3, OutputTokens: fakeapi.CountTokens(a.Text), ThinkingTokens: fakeapi.ThoughtTokens,
		TotalTokens: 3 + fakeapi.CountTokens(a.Text) + fakeapi.ThoughtTokens}
	if a.Usage == nil || *a.Usage != want {
		t.Fatalf("usage %+v, want %+v", a.Usage, want)
	}
}

package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

func TestMain(m *testing.M) {
	// The SDK links OpenCensus (through cloud.google.com/go/auth), whose
	// package init starts a worker goroutine that never ends.
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("go.opencensus.io/stats/view.(*worker).start"))
}

// env is the environment a Backend under test reads: a key, and the
// fake's address.
func env(s *fakeapi.Server) func(string) string {
	return func(k string) string {
		switch k {
		case "GEMINI_API_KEY":
			return "test-key"
		case "GOOGLE_GEMINI_BASE_URL":
			return s.URL()
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
	if want := fakeapi.Answer(DefaultModel, 1, "", "first question"); a.Text != want {
		t.Fatalf("answer %q, want %q", a.Text, want)
	}
	if f.turns(a.SessionID) != 1 {
		t.Fatal("the first turn was not recorded")
	}

	b := f.mustRun(backend.Turn{Prompt: "second question", Session: strings.ToUpper(a.SessionID)})
	if b.SessionID != a.SessionID {
		t.Fatalf("continued as %s, want %s", b.SessionID, a.SessionID)
	}
	if want := fakeapi.Answer(DefaultModel, 3, "", "second question"); b.Text != want {
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
	if last.Model != DefaultModel {
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
	if want := fakeapi.Answer(DefaultModel, 3, "", "after the restart"); b.Text != want {
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

func TestModelSuggestions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	_, err := f.run(backend.Turn{Prompt: "hi", Model: "gemini-2.5-flsh"})
	wantKind(t, err, backend.KindInput, 0, `"gemini-2.5-flsh" is not in the Gemini API's model list`, "did you mean gemini-2.5-flash")
	_, err = f.run(backend.Turn{Prompt: "hi", Model: "gemini-2.5"})
	wantKind(t, err, backend.KindInput, 0, "gemini-2.5-flash", "gemini-2.5-pro")
	_, err = f.run(backend.Turn{Prompt: "hi", Model: "claude"})
	wantKind(t, err, backend.KindInput, 0, "nor is any like it", DefaultModel)
	_, err = f.run(backend.Turn{Prompt: "hi", Model: "text-embedding-004"})
	wantKind(t, err, backend.KindInput, 0, "does not generate content")
	if n := len(f.streams()); n != 0 {
		t.Fatalf("%d turns were sent to the API with a bad model", n)
	}
	lists := 0
	for _, r := range f.fake.Requests() {
		if r.Method == fakeapi.MethodListModels {
			lists++
		}
	}
	if lists != 1 {
		t.Fatalf("the model list was fetched %d times, want once (cached)", lists)
	}
}

func TestModelListRefreshed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{ModelsTTL: time.Nanosecond})
	_, err := f.run(backend.Turn{Prompt: "hi", Model: "gemini-9-ultra"})
	wantKind(t, err, backend.KindInput, 0, "not in the Gemini API's model list")
	f.fake.SetModels(append(fakeapi.DefaultModels(), fakeapi.Model{Name: "models/gemini-9-ultra"}))
	f.mustRun(backend.Turn{Prompt: "hi", Model: "gemini-9-ultra"})
}

func TestCheck(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	if err := f.b.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.restart(Options{Model: "gemini-1.0-pro"})
	wantKind(t, f.b.Check(context.Background()), backend.KindInput, 0, `the default model "gemini-1.0-pro"`)
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

// TestStatus400 checks a refused request: no retry, and the conversation
// is left as it was.
func TestStatus400(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	a := f.mustRun(backend.Turn{Prompt: "hi"})
	_, err := f.run(backend.Turn{Prompt: "[[status:400]]", Session: a.SessionID})
	wantKind(t, err, backend.KindAPI, 400, "refused the request (400 INVALID_ARGUMENT: fake error 400)")
	if n := len(f.streams()); n != 2 {
		t.Fatalf("%d stream requests, want 2 (no retry of a 400)", n)
	}
	if f.turns(a.SessionID) != 1 {
		t.Fatal("a failed turn changed the conversation")
	}
}

func TestAuthError(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	_, err := f.run(backend.Turn{Prompt: "[[status:403]]"})
	wantKind(t, err, backend.KindAuth, 403, "refused the credentials", "Gemini API key from GEMINI_API_KEY", "GEMINI_API_KEY or GOOGLE_API_KEY")
	if n := len(f.streams()); n != 1 {
		t.Fatalf("%d stream requests, want 1 (no retry of a 403)", n)
	}
}

// TestBadKey: the Gemini API answers a bad key with 400 API_KEY_INVALID,
// which the backend reports as an auth error naming the credentials it
// accepts, from Check as from a turn (whose model list request fails
// first), and without retrying.
func TestBadKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.fake.RequireKey("another-key")
	err := f.b.Check(context.Background())
	wantKind(t, err, backend.KindAuth, 400, "refused the credentials (400 INVALID_ARGUMENT: "+fakeapi.BadKeyMessage,
		"using Gemini API key from GEMINI_API_KEY", "GEMINI_API_KEY or GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI")
	_, err = f.run(backend.Turn{Prompt: "hi"})
	wantKind(t, err, backend.KindAuth, 400, "refused the credentials")
	if n := len(f.fake.Requests()); n != 2 {
		t.Fatalf("%d requests, want 2 (one list each, no stream, no retry)", n)
	}
	f.fake.RequireKey("test-key")
	f.mustRun(backend.Turn{Prompt: "hi"})
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
	if want := fakeapi.Answer(DefaultModel, 1, "", prompt); a.Text != want {
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

// TestNullModelList: an answer the SDK panics on is a list that could not
// be had, not a crash.
func TestNullModelList(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"models":null}`)
	}))
	defer ts.Close()
	f := newFixture(t, Options{})
	f.restart(Options{BaseURL: ts.URL})
	err := f.b.Check(context.Background())
	wantKind(t, err, backend.KindFailed, 0, "the model list could not be read")
	f.b.Close()
}

// TestEmptyModelList: an endpoint that lists no models leaves names
// unchecked rather than refusing them all.
func TestEmptyModelList(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.fake.SetModels(nil)
	f.mustRun(backend.Turn{Prompt: "hi", Model: "any-model"})
	if err := f.b.Check(context.Background()); err != nil {
		t.Fatal(err)
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

func TestContextTooLong(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Model: fakeapi.TinyModel})
	// Short enough in bytes that no count is needed.
	a := f.mustRun(backend.Turn{Prompt: "short"})
	if n := countRequests(f.fake); n != 0 {
		t.Fatalf("%d countTokens requests for a short conversation", n)
	}
	// Long in bytes, few in tokens: counted, then sent.
	long := strings.Repeat("x", 200)
	f.mustRun(backend.Turn{Prompt: long, Session: a.SessionID})
	if n := countRequests(f.fake); n != 1 {
		t.Fatalf("%d countTokens requests, want 1", n)
	}
	// Too many tokens: refused before sending, the conversation unchanged.
	words := strings.Repeat("word ", fakeapi.TinyModelLimit)
	sent := len(f.streams())
	_, err := f.run(backend.Turn{Prompt: words, Session: a.SessionID, SystemPrompt: "sys"})
	// The history is "short", its answer, the 200 x's, its answer, and the
	// new prompt, plus the system instruction.
	n := 1 + fakeapi.CountTokens(fakeapi.Answer(fakeapi.TinyModel, 1, "", "short")) + 1 +
		fakeapi.CountTokens(fakeapi.Answer(fakeapi.TinyModel, 3, "", long)) + fakeapi.TinyModelLimit + 1
	wantKind(t, err, backend.KindInput, 0, "is "+itoa(n)+" tokens", "more than the 60 tokens model gemini-tiny-test takes in", "start a new conversation with chat")
	if len(f.streams()) != sent {
		t.Fatal("a conversation too long was sent")
	}
	if f.turns(a.SessionID) != 2 {
		t.Fatal("a refused turn changed the conversation")
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func countRequests(s *fakeapi.Server) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Method == fakeapi.MethodCountTokens {
			n++
		}
	}
	return n
}

func genConfig(t *testing.T, r fakeapi.Request) map[string]any {
	t.Helper()
	m := map[string]any{}
	if r.GenerationConfig != nil {
		if err := json.Unmarshal(r.GenerationConfig, &m); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func TestTuning(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	temp := 0.25
	for i, tc := range []struct {
		model, mode string
		thinking    string // the thinkingConfig sent, as JSON; "" for none
		note        string // in NotApplied
	}{
		{"gemini-2.5-pro", "max", `{"thinkingBudget":32768}`, ""},
		{"gemini-2.5-pro", "minimal", `{"thinkingBudget":128}`, ""},
		{"gemini-2.5-flash", "medium", `{"thinkingBudget":8192}`, ""},
		{"gemini-2.5-flash", "max", `{"thinkingBudget":24576}`, "the most gemini-2.5-flash takes"},
		{"gemini-2.5-flash-lite", "minimal", `{"thinkingBudget":512}`, "the least gemini-2.5-flash-lite takes"},
		{"gemini-3-pro-preview", "max", `{"thinkingLevel":"HIGH"}`, ""},
		{"gemini-3-pro-preview", "minimal", `{"thinkingLevel":"LOW"}`, "sent as LOW"},
		{"gemini-2.0-flash", "high", "", "thinking_mode: model gemini-2.0-flash does not think"},
	} {
		a := f.mustRun(backend.Turn{Prompt: "tune", Model: tc.model, ThinkingMode: tc.mode, Temperature: &temp})
		gc := genConfig(t, f.streams()[i])
		if gc["temperature"] != 0.25 {
			t.Errorf("%s %s: temperature %v", tc.model, tc.mode, gc["temperature"])
		}
		got := ""
		if v, ok := gc["thinkingConfig"]; ok {
			b, _ := json.Marshal(v)
			got = string(b)
		}
		if got != tc.thinking {
			t.Errorf("%s %s: thinkingConfig %s, want %s", tc.model, tc.mode, got, tc.thinking)
		}
		notes := strings.Join(a.NotApplied, "; ")
		if tc.note == "" && notes != "" || !strings.Contains(notes, tc.note) {
			t.Errorf("%s %s: NotApplied %q, want %q", tc.model, tc.mode, notes, tc.note)
		}
	}
	// No tuning asked, none sent.
	f.mustRun(backend.Turn{Prompt: "plain"})
	reqs := f.streams()
	if gc := genConfig(t, reqs[len(reqs)-1]); gc["temperature"] != nil || gc["thinkingConfig"] != nil {
		t.Errorf("untuned call sent %v", gc)
	}
	_, err := f.run(backend.Turn{Prompt: "x", ThinkingMode: "huge"})
	wantKind(t, err, backend.KindInput, 0, `thinking_mode "huge" is not one of minimal, low, medium, high, max`)
}

func TestUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	prompt := "three word prompt"
	a := f.mustRun(backend.Turn{Prompt: prompt, ThinkingMode: "low"})
	want := backend.Usage{PromptTokens: 3, OutputTokens: fakeapi.CountTokens(a.Text), ThinkingTokens: fakeapi.ThoughtTokens}
	if a.Usage == nil || *a.Usage != want {
		t.Fatalf("usage %+v, want %+v", a.Usage, want)
	}
}

func TestSafetyBlocks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	_, err := f.run(backend.Turn{Prompt: "[[block:SAFETY]]"})
	wantKind(t, err, backend.KindInput, 0, "blocked the prompt (SAFETY)")
	_, err = f.run(backend.Turn{Prompt: "[[finish:SAFETY]]"})
	wantKind(t, err, backend.KindEmpty, 0, "stopped the answer for safety (finish reason SAFETY)")
	_, err = f.run(backend.Turn{Prompt: "[[finish:STOP]]"})
	wantKind(t, err, backend.KindEmpty, 0, "answered no text (finish reason STOP)")
	if n := f.hist.appends.Load(); n != 0 {
		t.Fatalf("blocked answers left %d turns", n)
	}
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

func TestUnreachable(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	url := f.fake.URL()
	f.fake.Close()
	f.restart(Options{BaseURL: url, Retries: -1})
	_, err := f.run(backend.Turn{Prompt: "hi"})
	wantKind(t, err, backend.KindFailed, 0, "could not be reached")
}

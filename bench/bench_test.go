package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/acp"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/api"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/cli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/mcptest"
	ourserver "github.com/gemini-mcp-server/gemini-mcp-server/internal/server"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/embedded"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/tools"
)

var fakeGemini string

func TestMain(m *testing.M) {
	serveNoopIfAsked()
	flag.Parse()
	os.Exit(geminitest.RunWithFake(m, &fakeGemini))
}

// TestQuick runs `go run ./bench -quick -peers=false` in-process, so that
// CI proves the bench still works against the current server. It needs no
// npm: the peers are left out, and the end-to-end section runs only when
// $GEMINI_MCP_E2E_GEMINI names the real CLI (scripts/test.sh sets it).
// The replicas section runs when redis-server and haproxy are on PATH (it
// says it skipped otherwise; with GEMINI_MCP_REDIS_REQUIRED=1 and
// GEMINI_MCP_LB_REQUIRED=1 a skip fails the test).
// It asserts that every section ran, not how fast: CI machines differ.
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	// Everything the bench creates must be gone when it returns.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	cfg, err := parseFlags([]string{"-quick", "-peers=false", "-install=false", "-out", filepath.Join(t.TempDir(), "bench.md")}, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	cfg.fake = fakeGemini
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	var stdout, log bytes.Buffer
	start := time.Now()
	if err := run(ctx, cfg, &stdout, &log); err != nil {
		t.Fatalf("bench: %v\nlog:\n%s\nreport:\n%s", err, log.String(), stdout.String())
	}
	t.Logf("quick bench took %v", time.Since(start).Round(time.Millisecond))
	md, err := os.ReadFile(cfg.out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(md, stdout.Bytes()) {
		t.Error("-out differs from what was printed")
	}
	report := string(md)
	for _, want := range []string{
		"### 1. Server overhead per call", "| gemini-mcp-server |", "bare exec of the fake",
		"### 2. Cold start", "### 3. Memory", "### 4. Parallelism", "### 5. HTTP", "### 6. End to end",
		"### How each server ran the CLI", "--output-format json", "### Targets",
		"### 7. API backend", "| bare genai client (in the bench process) |", "| gemini-mcp-server --backend api |",
		"| `-tags noapi` build, backend warm |", "**Package initialisation**", "API backend: overhead ≤ 1 ms",
		"Replicas: the same HTTP load through HAProxy to 1 and to 3 replicas",
		"| no-op go-sdk server | MCP client (bench process), driving the no-op |", "**Bound at 16 clients.**",
		"HTTP `tools/call`, 16 clients: calls/s ≥ 0.6× the no-op go-sdk server's", "HTTP `tools/call`, 16 clients: our server's CPU per call ≤ 1.6×",
		"| no-op go-sdk server |", "cold start to tools/list ≤ 1.3× the no-op go-sdk server", "| floor: `gemini-mcp-server --version` (exec to exit) |", "`--version` alone peaks at",
		"resident memory ≤ 16 MB after 50 calls", "private (anonymous) memory after 50 calls ≤ 2× the no-op go-sdk server's",
	} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if strings.Contains(report, "FAILED") {
		t.Errorf("a section failed:\n%s", report)
	}
	if os.Getenv("GEMINI_MCP_E2E_GEMINI") != "" && !strings.Contains(report, "| `--warm-on-connect=false` |") {
		t.Error("the first-chat section did not run although GEMINI_MCP_E2E_GEMINI is set")
	}
	if os.Getenv("GEMINI_MCP_E2E_GEMINI") != "" && strings.Contains(report, "skipped: no real Gemini CLI") {
		t.Error("the end-to-end section skipped although GEMINI_MCP_E2E_GEMINI is set")
	}
	if os.Getenv("GEMINI_MCP_REDIS_REQUIRED") == "1" && os.Getenv("GEMINI_MCP_LB_REQUIRED") == "1" {
		for _, want := range []string{"| 3 replicas |", "**Projection.**", "calls/s per core = 1 ÷", "per further turn"} {
			if !strings.Contains(report, want) {
				t.Errorf("the replicas section lacks %q although redis-server and haproxy are required", want)
			}
		}
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "*"))
	if len(left) > 0 {
		t.Errorf("the bench left files in TMPDIR: %v", left)
	}
	t.Logf("report:\n%s", report)
}

func TestStats(t *testing.T) {
	s := series{5, 1, 4, 2, 3}
	if s.median() != 3 || s.min() != 1 || s.max() != 5 {
		t.Errorf("median/min/max of %v: %v %v %v", s, s.median(), s.min(), s.max())
	}
	if m := (series{4, 1, 3, 2}).median(); m != 2.5 {
		t.Errorf("even median %v", m)
	}
	if p := (series{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}).percentile(99); p != 10 {
		t.Errorf("p99 %v", p)
	}
	if p := (series{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}).percentile(50); p != 5 {
		t.Errorf("p50 %v", p)
	}
	if d := (series{3, 5}).minus(series{1, 1}); d[0] != 2 || d[1] != 4 {
		t.Errorf("minus %v", d)
	}
	for sec, want := range map[float64]string{1.5: "1.500 s", 0.25: "250 ms", 0.0123: "12.3 ms", 0.00123: "1.23 ms", 0.0005: "500 µs"} {
		if got := fmtDur(sec); got != want {
			t.Errorf("fmtDur(%v) = %q, want %q", sec, got, want)
		}
	}
}

// inProcess is our server on the fake CLI with an SDK client connected
// in memory: no stdio and no process for the server, so a CPU profile of
// the benchmark shows the server's own work per call (plus the client's).
type inProcess struct {
	cs       *mcp.ClientSession
	fakeHome string
}

func newInProcess(b *testing.B, kind string) *inProcess {
	dir := b.TempDir()
	work, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	h := &inProcess{fakeHome: filepath.Join(dir, "fakehome")}
	// The embedded store, in a file, as users run by default: its cost per
	// call is part of what the benchmark measures.
	store, err := embedded.Open(filepath.Join(dir, "sessions.db"), session.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	opts := geminicli.Options{
		Gemini:  fakeGemini,
		Env:     geminitest.FakeEnv(h.fakeHome, "", time.Minute),
		Timeout: time.Minute,
	}
	oneShot := cli.NewRunner(opts, nil)
	var runner backend.Backend = oneShot
	switch kind {
	case backendWarm:
		runner = acp.New(acp.Options{CLI: opts, Fallback: oneShot}, nil)
	case backendAPI:
		fake := fakeapi.New()
		b.Cleanup(fake.Close)
		env := map[string]string{"GEMINI_API_KEY": apiKey, "GOOGLE_GEMINI_BASE_URL": fake.URL()}
		if runner, err = api.New(api.Options{Timeout: time.Minute, Getenv: func(k string) string { return env[k] }}, store, nil); err != nil {
			b.Fatal(err)
		}
	}
	runner = backend.Limit(runner, 0)
	srv := ourserver.New("bench", ourserver.Families{Chat: &tools.Deps{Conv: conversation.New(conversation.Options{Backend: runner, Store: store, DefaultCwd: work}), MaxPromptBytes: 1 << 20}}, nil)
	b.Cleanup(func() { runner.Close() })
	h.cs = mcptest.Connect(b, srv, &mcptest.Options{Client: &mcp.Implementation{Name: "bench", Version: "1"}})
	return h
}

// resetFakeEvery clears the fake's sessions every n iterations, off the
// clock: the fake reads all of them on each --session-id call.
func resetFakeEvery(b *testing.B, i, n int, home string) {
	if i > 0 && i%n == 0 {
		b.StopTimer()
		if err := os.RemoveAll(home); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkServerCall is one chat call through our server with the instant
// fake CLI, with each backend. Compare oneshot with BenchmarkBareExec: the
// difference is the server's overhead per call. warm sends each prompt to
// a long-lived fake `gemini --acp` process instead; api sends it to the
// fake Gemini API (compare with BenchmarkBareGenai).
//
//	go test -run '^$' -bench . -cpuprofile cpu.out ./bench && go tool pprof -top bench.test cpu.out
func BenchmarkServerCall(b *testing.B) {
	for _, backend := range []string{backendOneshot, backendWarm, backendAPI} {
		b.Run(backend, func(b *testing.B) {
			h := newInProcess(b, backend)
			t := ours("", "", "gemini-mcp-server", backend)
			ctx := context.Background()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				resetFakeEvery(b, i, 100, h.fakeHome)
				m := marker("gobench", 0, i)
				if _, err := callTool(ctx, h.cs, t, prompt(m), "", m, time.Minute); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkBareExec execs the fake with the arguments our server passes.
func BenchmarkBareExec(b *testing.B) {
	dir := b.TempDir()
	work, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	home := filepath.Join(dir, "fakehome")
	env := append(os.Environ(), geminitest.FakeEnv(home, "", time.Minute)...)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resetFakeEvery(b, i, 100, home)
		m := marker("gobench", 0, i)
		cmd := exec.Command(fakeGemini, "--session-id", session.NewUUID(), "--output-format", "json")
		cmd.Dir, cmd.Env, cmd.Stdin = work, env, strings.NewReader(prompt(m))
		out, err := cmd.Output()
		if err != nil || !bytes.Contains(out, []byte(m)) {
			b.Fatalf("fake: %v: %s", err, out)
		}
	}
}

// BenchmarkBareGenai makes the API backend's request for a new
// conversation with the genai SDK alone, against the fake Gemini API.
func BenchmarkBareGenai(b *testing.B) {
	fake := fakeapi.New()
	defer fake.Close()
	client, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: apiKey, Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: fake.URL()},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := marker("gobench", 0, i)
		if _, err := bareGenai(context.Background(), client, prompt(m), m); err != nil {
			b.Fatal(err)
		}
	}
}

// TestParseMem checks the reading of /proc/<pid>/status: the four sizes the
// memory section reports, and an error when one is missing or odd.
func TestParseMem(t *testing.T) {
	status := "Name:\tgemini-mcp-serv\nVmHWM:\t   20480 kB\nVmRSS:\t   18432 kB\nRssAnon:\t    6144 kB\nRssFile:\t   12288 kB\nRssShmem:\t       0 kB\n"
	m, err := parseMem(strings.NewReader(status), "status")
	if err != nil {
		t.Fatal(err)
	}
	if want := (memInfo{rss: 18432 * 1024, hwm: 20480 * 1024, anon: 6144 * 1024, file: 12288 * 1024}); m != want {
		t.Errorf("got %+v, want %+v", m, want)
	}
	for _, bad := range []string{
		strings.Replace(status, "RssAnon", "RssAnonX", 1),
		strings.Replace(status, "6144 kB", "6144 MB", 1),
		strings.Replace(status, "12288 kB", "x kB", 1),
	} {
		if _, err := parseMem(strings.NewReader(bad), "status"); err == nil {
			t.Errorf("no error for %q", bad)
		}
	}
}

func TestShellQuote(t *testing.T) {
	got := fmt.Sprint(shellQuote("-rounds"), " ", shellQuote("a b"), " ", shellQuote("it's"), " ", shellQuote(""))
	if want := `-rounds 'a b' 'it'\''s' ''`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// TestProjection checks the arithmetic the replicas section prints: calls/s
// per core is the inverse of the CPU seconds per call, and a replica of C
// cores serves C times that.
func TestProjection(t *testing.T) {
	text := projection(0.002, 0.0002, 0.0001, 400, 420)
	for _, want := range []string{
		"calls/s per core = 1 ÷ 0.002000 s = **500**",
		"1 ÷ 0.000200 s = **5000 calls/s**",
		"1 ÷ 0.000100 s = 10000 calls/s per core",
		"4 × 500 = **2000 calls/s** at full CPU; plan on 70%: 1400",
		"420 calls/s through 3 replicas against 400 through 1, ×1.05",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the projection lacks %q:\n%s", want, text)
		}
	}
}

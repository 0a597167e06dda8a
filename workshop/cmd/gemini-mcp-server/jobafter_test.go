package main

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	_ "modernc.org/sqlite"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
)

// The fake turns of these tests take 3 s, against a --job-after of
// 200ms: the limit passes long before they end, however busy the machine.
const (
	jobAfter  = "200ms"
	pastLimit = "[[sleep:3000]] "
)

// handedOver checks that res answers a call handed over to a job past
// --job-after, and returns the job's id.
func handedOver(t *testing.T, tool string, res *mcp.CallToolResult) string {
	t.Helper()
	id, _ := res.Meta["jobId"].(string)
	text := resultText(res)
	if id == "" || res.Meta["jobStatus"] != "working" || !strings.Contains(text, "ran past this server's limit of "+jobAfter) ||
		!strings.Contains(text, "Started job "+id+": "+tool+" runs in the background") {
		t.Fatalf("%s past the limit: %s %+v", tool, text, res.Meta)
	}
	return id
}

// TestJobAfterStdio: over stdio, a call of chat or of an expert tool still
// running at --job-after answers with a job's id, and the job tool
// returns the result the same call returns on a server without the limit
// (the same turn went on: Gemini ran once for it); codereview, whose
// output schema a job's result would not conform to, answers in the
// foreground however long it takes.
func TestJobAfterStdio(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	plain := connect(t, e.command())
	limited := connect(t, e.command("--job-after", jobAfter))

	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"chat", map[string]any{"prompt": pastLimit + "a chat past the limit"}},
		{"thinkdeep", map[string]any{"current_analysis": pastLimit + "a plan past the limit"}},
	} {
		want := callOK(t, plain, c.tool, c.args)
		if want.Meta["jobId"] != nil {
			t.Fatalf("%s without a limit became a job: %s", c.tool, resultText(want))
		}
		id := handedOver(t, c.tool, callOK(t, limited, c.tool, c.args))
		got, err := jobEnd(t, limited, id, nil)
		if err != nil || normal(t, got) != normal(t, want) {
			t.Errorf("%s: the job's result %v\n%s\nthe call's\n%s", c.tool, err, normal(t, got), normal(t, want))
		}
	}
	runs := 0
	all, err := geminitest.ReadLog(e.log)
	if err != nil {
		t.Fatal(err)
	}
	for _, inv := range all {
		if strings.Contains(inv.Prompt, "a chat past the limit") {
			runs++
		}
	}
	if runs != 2 {
		t.Errorf("the chat past the limit ran %d times, want 2: once on each server", runs)
	}

	if err := os.WriteFile(filepath.Join(e.work, "slow.go"), []byte("package slow // "+pastLimit+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := callOK(t, limited, "codereview", map[string]any{"files": []string{"slow.go"}, "context": "a review past the limit"})
	if res.Meta["jobId"] != nil || res.StructuredContent == nil {
		t.Errorf("codereview past the limit: %s %+v", resultText(res), res.Meta)
	}
}

// TestJobAfterHTTP: over HTTP with tokens, a chat past --job-after is
// token one's job: token two can neither read nor cancel it, token one
// polls it to its answer.
func TestJobAfterHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.vars = append(e.vars, "GEMINI_MCP_TOKENS="+tokenOne+","+tokenTwo)
	addr, _ := startHTTP(t, e, "--job-after", jobAfter)
	one, two := httpClient(t, addr, tokenOne), httpClient(t, addr, tokenTwo)

	id := handedOver(t, "chat", callOK(t, one, "chat", map[string]any{"prompt": pastLimit + "token one's chat"}))
	for _, args := range []map[string]any{{"jobId": id}, {"jobId": id, "cancel": true}} {
		if res, err := callTool(two, "job", args); err != nil || !res.IsError || !strings.Contains(resultText(res), "no such job") {
			t.Errorf("token two's job %v: %v %s", args, err, resultText(res))
		}
	}
	res, err := jobEnd(t, one, id, nil)
	if err != nil || res.IsError || !strings.Contains(answerOf(res), "token one's chat") || res.Meta["sessionId"] == nil {
		t.Fatalf("token one's job: %v %s %+v", err, resultText(res), res.Meta)
	}
}

// jobRows counts the jobs in the embedded store of e.
func jobRows(t *testing.T, e *env) int {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(e.state, "sessions.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM jobs`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestJobAfterCancelBeforeLimit: a client that cancels its call before
// --job-after stops the turn at once: its CLI process is gone, and no job
// was made.
func TestJobAfterCancelBeforeLimit(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("process checks use /proc")
	}
	t.Parallel()
	e := newEnv(t)
	cs := connect(t, e.command("--job-after", "10m"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ended := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "[[sleep:60000]] cancelled before the limit"}})
		ended <- err
	}()
	inv := geminitest.WaitInvocation(t, e.log, time.Minute, func(inv geminitest.Invocation) bool {
		return strings.Contains(inv.Prompt, "cancelled before the limit")
	})
	cancel()
	if err := <-ended; err == nil {
		t.Fatal("the cancelled call answered")
	}
	guard, done := context.WithTimeout(context.Background(), time.Minute) // a failure guard only
	defer done()
	if err := geminitest.Poll(guard, "the cancelled turn's CLI to end", func() (bool, error) { return !geminitest.Alive(inv.Pid), nil }); err != nil {
		t.Fatal(err)
	}
	// The server is still there, and made no job.
	callOK(t, cs, "sessions", nil)
	if n := jobRows(t, e); n != 0 {
		t.Errorf("%d jobs of a call cancelled before the limit", n)
	}
}

// TestJobAfterKilledServer: a server killed (SIGKILL) while a chat it
// handed over to a job runs, and started again on the same embedded
// store, reports the job failed at its first poll, saying why, rather
// than a minute later when its heartbeat is stale; while it ran, another
// server on the store reported it working.
func TestJobAfterKilledServer(t *testing.T) {
	t.Parallel()
	e, fake := apiEnv(t)
	cmd := e.command("--backend", "api", "--job-after", jobAfter)
	first := connect(t, cmd)
	id := handedOver(t, "chat", callOK(t, first, "chat", map[string]any{"prompt": "[[stall]] a chat killed mid-job"}))
	waitArrived(t, fake, "a chat killed mid-job")
	// Another live server on the store leaves the job to the one running it.
	other := connect(t, e.command("--backend", "api"))
	for _, cs := range []*mcp.ClientSession{first, other} {
		if res := callOK(t, cs, "job", map[string]any{"jobId": id}); res.Meta["jobStatus"] != "working" {
			t.Fatalf("the job before the kill: %s", resultText(res))
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	first.Close() // reaps it

	next := connect(t, e.command("--backend", "api"))
	res, err := callTool(next, "job", map[string]any{"jobId": id})
	if err != nil || res.Meta["jobStatus"] != "failed" || !res.IsError || !strings.Contains(resultText(res), jobs.OrphanedError) {
		t.Fatalf("the killed server's job after a restart: %v %s %+v", err, resultText(res), res)
	}
}

// TestJobAfterProgress: a client that waits for a call under the limit
// gets its progress notifications and then its result, not a job.
func TestJobAfterProgress(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// The client's SDK hands notifications to the handler apart from the
	// responses: the test waits for one sent while gemini ran rather than
	// look when the call has returned.
	var mu sync.Mutex
	var messages []string
	running := make(chan struct{})
	var once sync.Once
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "progress-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			messages = append(messages, req.Params.Message)
			if strings.HasPrefix(req.Params.Message, "gemini is running") {
				once.Do(func() { close(running) })
			}
		}}).Connect(context.Background(), &mcp.CommandTransport{Command: e.command("--job-after", "10m", "--progress-interval", "100ms")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	params := &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "[[sleep:1000]] a chat waited for"}}
	params.SetProgressToken("p")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError || res.Meta["jobId"] != nil || !strings.Contains(answerOf(res), "a chat waited for") {
		t.Fatalf("the call: %v %s %+v", err, resultText(res), res)
	}
	select {
	case <-running:
	case <-ctx.Done():
		mu.Lock()
		defer mu.Unlock()
		t.Errorf("no progress while gemini ran: %q", messages)
	}
}

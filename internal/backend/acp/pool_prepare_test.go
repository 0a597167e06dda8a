package acp

import (
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// The warm pool readied for a client that has connected (Prepare), ahead
// of its first chat.

// prepared calls Prepare on r (the warm backend, limited) and waits for
// the work it started: the process's start; its spare is being made once
// it returns.
func prepared(t *testing.T, r backend.Backend, dir string) {
	t.Helper()
	for {
		if b, ok := r.(*Backend); ok {
			select {
			case <-b.prepare(dir):
			case <-geminitest.Context(t).Done():
				t.Fatal("Prepare did not end")
			}
			return
		}
		r = r.(interface{ Unwrap() backend.Backend }).Unwrap()
	}
}

// TestPrepareReadiesTheFirstChat: Prepare starts a process and its spare
// session, and the first chat uses both: no start, no session/new of its
// own. A second Prepare starts nothing more.
func TestPrepareReadiesTheFirstChat(t *testing.T) {
	home := t.TempDir()
	r, log, acpLog := newWarmRunner(t, geminicli.Options{Env: []string{"GEMINI_CLI_HOME=" + home}}, WarmOptions{Spares: 1})
	dir := geminitest.WorkDir(t)
	prepared(t, r, dir)
	p := onlyProc(t, r)
	s := readySpare(t, p, dir)
	if !s.kept {
		t.Fatal("the prepared spare is not kept")
	}
	news := countMethod(t, acpLog, "session/new")
	res, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "first chat", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if res.Via != "warm" || res.SessionID != s.id {
		t.Fatalf("the first chat: via %q, session %s; the prepared spare is %s", res.Via, res.SessionID, s.id)
	}
	// The call's end made the next spare (its session/new), and nothing
	// else asked for a session.
	readySpare(t, p, dir)
	if n := countMethod(t, acpLog, "session/new"); n != news+1 {
		t.Fatalf("session/new sent %d times after the prepared spare was ready, want 1 (the next spare)", n-news)
	}
	prepared(t, r, dir)
	if started, _ := acpStarts(t, log); len(started) != 1 {
		t.Fatalf("%d processes started, want the prepared one only", len(started))
	}
	onlyProc(t, r)
}

// TestPrepareRenewsItsSpare: a prepared spare that expires unused is
// replaced by a fresh one, since the client that connected has not chatted
// yet; its file goes.
func TestPrepareRenewsItsSpare(t *testing.T) {
	home := t.TempDir()
	r, _, _ := newWarmRunner(t, geminicli.Options{Env: []string{"GEMINI_CLI_HOME=" + home}}, WarmOptions{})
	clk := newFakeClock()
	poolOf(r).clock = clk
	dir := geminitest.WorkDir(t)
	prepared(t, r, dir)
	p := onlyProc(t, r)
	old := readySpare(t, p, dir)
	clk.Advance(config.DefaultWarmSpareAge)
	clk.Tick()
	clk.Tick() // the first tick's work is done
	fresh := readySpare(t, p, dir)
	if fresh == old || fresh.id == old.id || !fresh.kept {
		t.Fatalf("after the spare's age: spare %s (kept %v), was %s", fresh.id, fresh.kept, old.id)
	}
	if files := chatFiles(t, home, old.id); len(files) != 0 {
		t.Fatalf("the expired spare's file is still there: %v", files)
	}
}

// TestPrepareOff: with NotOnConnect (--warm-on-connect=false), Prepare
// starts nothing; the first chat starts the process.
func TestPrepareOff(t *testing.T) {
	r, log, _ := newWarmRunner(t, geminicli.Options{}, WarmOptions{NotOnConnect: true})
	prepared(t, r, geminitest.WorkDir(t))
	if started, _ := acpStarts(t, log); len(started) != 0 {
		t.Fatalf("%d processes started by Prepare with NotOnConnect", len(started))
	}
}

// TestPrepareLeavesAFullPool: Prepare never retires a process, nor starts
// one past Processes: a pool full of processes for another system prompt
// is left as it is.
func TestPrepareLeavesAFullPool(t *testing.T) {
	r, log, _ := newWarmRunner(t, geminicli.Options{}, WarmOptions{Processes: 1})
	dir := geminitest.WorkDir(t)
	if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "an expert's turn", SystemPrompt: "You are a reviewer.", Dir: dir}); err != nil {
		t.Fatal(err)
	}
	p := onlyProc(t, r)
	prepared(t, r, dir)
	if started, _ := acpStarts(t, log); len(started) != 1 || onlyProc(t, r) != p || p.isDraining() {
		t.Fatalf("Prepare on a full pool: %d processes started, the first draining: %v", len(started), p.isDraining())
	}
}

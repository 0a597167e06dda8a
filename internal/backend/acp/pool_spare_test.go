package acp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// The warm pool's spare sessions, made ahead of a new chat while a process
// is idle, and its recycling after a number of sessions (helpers in
// pool_test.go).

// poolOf is the pool of the warm backend that r (limited by
// newWarmRunner) runs.
func poolOf(r backend.Backend) *pool {
	for {
		if b, ok := r.(*Backend); ok {
			return b.pool
		}
		r = r.(interface{ Unwrap() backend.Backend }).Unwrap()
	}
}

// onlyProc returns the pool's one process.
// firstChat runs a first chat in a new folder, which starts the pool's
// process, and returns that process and the folder.
func firstChat(t *testing.T, r backend.Backend) (*acpProc, string) {
	t.Helper()
	dir := geminitest.WorkDir(t)
	if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "first", Dir: dir}); err != nil {
		t.Fatal(err)
	}
	return onlyProc(t, r), dir
}

// spareFolders is how many folders p keeps spares for, or is making one.
func spareFolders(p *acpProc) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.spares)
}

func onlyProc(t *testing.T, r backend.Backend) *acpProc {
	t.Helper()
	pl := poolOf(r)
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if len(pl.procs) != 1 {
		t.Fatalf("%d processes, want 1", len(pl.procs))
	}
	return pl.procs[0]
}

// readySpare waits for p's spare for dir, which a call's end asked for,
// and returns it.
func readySpare(t *testing.T, p *acpProc, dir string) *spare {
	t.Helper()
	p.mu.Lock()
	s := p.spares[dir]
	p.mu.Unlock()
	if s == nil {
		t.Fatalf("no spare session for %s", dir)
	}
	select {
	case <-s.ready:
	case <-time.After(30 * time.Second):
		t.Fatal("the spare session was not made")
	}
	if s.err != nil {
		t.Fatalf("spare: %v", s.err)
	}
	return s
}

// chatFiles returns the session files in the real CLI's layout under home
// (the fake writes them when GEMINI_CLI_HOME is set) that name session id.
func chatFiles(t *testing.T, home, id string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*-"+id[:8]+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// countMethod counts the messages with method in the ACP log.
func countMethod(t *testing.T, acpLog, method string) int {
	t.Helper()
	msgs, err := geminitest.ReadACPLog(acpLog)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range msgs {
		if m.Method == method {
			n++
		}
	}
	return n
}

func TestWarmSpareServesANewChat(t *testing.T) {
	home := t.TempDir()
	warm, _, acpLog := newWarmRunner(t, geminicli.Options{Env: []string{"GEMINI_CLI_HOME=" + home}}, WarmOptions{Spares: 1})
	cold, _ := newTestRunner(t, geminicli.Options{})
	dir := geminitest.WorkDir(t)
	if _, err := warm.Run(geminitest.Context(t), backend.Turn{Prompt: "first", Dir: dir}); err != nil {
		t.Fatal(err)
	}
	p := onlyProc(t, warm)
	s := readySpare(t, p, dir)
	if files := chatFiles(t, home, s.id); len(files) != 1 {
		t.Fatalf("the spare's session file: %v", files)
	}
	news := countMethod(t, acpLog, "session/new")
	// The model is set at call time; the answer is the one-shot one.
	c := backend.Turn{Prompt: "second", Model: "gemini-x", Dir: dir}
	w, err := warm.Run(geminitest.Context(t), c)
	if err != nil {
		t.Fatal(err)
	}
	o, err := cold.Run(geminitest.Context(t), c)
	if err != nil {
		t.Fatal(err)
	}
	if w.SessionID != s.id || w.Text != o.Text {
		t.Fatalf("warm %s %q, spare %s; one-shot %q", w.SessionID, w.Text, s.id, o.Text)
	}
	// No session/new between the spare's and the prompt: the spare served
	// it; the call's end asked for the next one (made after this count).
	msgs, _ := geminitest.ReadACPLog(acpLog)
	var before []string
	for _, m := range msgs {
		if m.Method == "session/prompt" && m.SessionID() == s.id {
			break
		}
		if m.Method == "session/new" {
			before = append(before, m.Method)
		}
	}
	if len(before) != news {
		t.Fatalf("%d session/new before the prompt, %d before the call", len(before), news)
	}
	// A reply continues it in the same process, and its file is kept.
	if _, err := warm.Run(geminitest.Context(t), backend.Turn{Prompt: "again", Dir: dir, Session: w.SessionID}); err != nil {
		t.Fatal(err)
	}
	last := readySpare(t, p, dir)
	// Close discards the spare left, with its file; the used session's
	// file stays.
	warm.Close()
	if files := chatFiles(t, home, last.id); len(files) != 0 {
		t.Fatalf("the spare's file is left after Close: %v", files)
	}
	if files := chatFiles(t, home, s.id); len(files) != 1 {
		t.Fatalf("the used session's file is gone: %v", files)
	}
}

func TestWarmSpareOnlyWhenIdle(t *testing.T) {
	r, _, acpLog := newWarmRunner(t, geminicli.Options{}, WarmOptions{Spares: 1, Processes: 1})
	dir, other := geminitest.WorkDir(t), geminitest.WorkDir(t)
	if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "first", Dir: dir}); err != nil {
		t.Fatal(err)
	}
	p := onlyProc(t, r)
	s := readySpare(t, p, dir)
	// A long call takes the spare and holds the process.
	ctx, cancel := context.WithCancel(geminitest.Context(t))
	defer cancel()
	held := make(chan error, 1)
	go func() {
		_, err := r.Run(ctx, backend.Turn{Prompt: "[[hang]]", Dir: dir})
		held <- err
	}()
	for !strings.Contains(promptsText(t, acpLog), "[[hang]]") {
		time.Sleep(5 * time.Millisecond)
	}
	// A chat in another folder ends while the process is busy: no spare.
	if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "busy", Dir: other}); err != nil {
		t.Fatal(err)
	}
	busySpares := spareFolders(p)
	if busySpares != 0 {
		t.Fatalf("%d spares made while a call held the process", busySpares)
	}
	cancel()
	<-held
	// Idle again: a spare for the folder of the call that ended.
	if s2 := readySpare(t, p, dir); s2.id == s.id {
		t.Fatal("the used spare was offered again")
	}
}

// promptsText is the text of every session/prompt in the ACP log.
func promptsText(t *testing.T, acpLog string) string {
	msgs, err := geminitest.ReadACPLog(acpLog)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, m := range msgs {
		if m.Method == "session/prompt" {
			b.Write(m.Params)
		}
	}
	return b.String()
}

func TestWarmSpareNeverQueuesBeforeACall(t *testing.T) {
	r, _, acpLog := newWarmRunner(t, geminicli.Options{}, WarmOptions{Spares: 1})
	p, dir := firstChat(t, r)
	readySpare(t, p, dir)
	// A call creating a session holds the lock (the test stands in for
	// it): a spare asked for meanwhile is not made, rather than queue.
	other := geminitest.WorkDir(t)
	news := countMethod(t, acpLog, "session/new")
	if !p.agent.newMu.TryLock() {
		t.Fatal("the session-creation lock is held")
	}
	s := poolOf(r).refill(p, other, false)
	select {
	case <-s.ready:
		p.agent.newMu.Unlock()
	case <-time.After(30 * time.Second):
		p.agent.newMu.Unlock()
		t.Fatal("the spare waited for the session-creation lock")
	}
	if !errors.Is(s.err, errCreating) {
		t.Fatalf("spare made while a session/new ran: %v", s.err)
	}
	p.mu.Lock()
	left := p.spares[other]
	p.mu.Unlock()
	if left != nil || countMethod(t, acpLog, "session/new") != news {
		t.Fatal("the failed spare was kept or asked for")
	}

	// A call that finds its spare still being made waits for it instead
	// of asking for another session (which would queue behind it).
	pending := &spare{dir: other, ready: make(chan struct{})}
	p.mu.Lock()
	p.spares[other] = pending
	p.mu.Unlock()
	p.use()
	res := make(chan string, 1)
	go func() {
		defer poolOf(r).leave(p)
		id, err := poolOf(r).session(geminitest.Context(t), p, other)
		if err != nil {
			t.Error(err)
		}
		res <- id
	}()
	id, err := p.agent.newSession(geminitest.Context(t), other, false)
	if err != nil {
		t.Fatal(err)
	}
	pending.id, pending.made = id, poolOf(r).clock.Now()
	close(pending.ready)
	if got := <-res; got != id {
		t.Fatalf("the call got session %s, not the spare %s", got, id)
	}
	if n := countMethod(t, acpLog, "session/new"); n != news+1 {
		t.Fatalf("%d session/new, want %d", n, news+1)
	}
}

func TestWarmSpareExpires(t *testing.T) {
	home := t.TempDir()
	r, _, _ := newWarmRunner(t, geminicli.Options{Env: []string{"GEMINI_CLI_HOME=" + home}}, WarmOptions{Spares: 1, SpareAge: time.Hour})
	clk := newFakeClock()
	poolOf(r).clock = clk
	advance := clk.Advance
	p, dir := firstChat(t, r)
	s := readySpare(t, p, dir)
	// Too old at call time: a new session serves the chat, the spare's
	// file goes.
	advance(time.Hour)
	res, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "second", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if res.SessionID == s.id {
		t.Fatal("a spare past its age served a chat")
	}
	if files := chatFiles(t, home, s.id); len(files) != 0 {
		t.Fatalf("the old spare's file is left: %v", files)
	}
	// The sweep discards an old spare unasked, and makes another one
	// since the process served a call after the old one was made.
	s2 := readySpare(t, p, dir)
	poolOf(r).fills.Wait()
	if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "reply", Dir: dir, Session: res.SessionID}); err != nil {
		t.Fatal(err)
	}
	advance(time.Hour)
	poolOf(r).expireSpares(p)
	if files := chatFiles(t, home, s2.id); len(files) != 0 {
		t.Fatalf("the swept spare's file is left: %v", files)
	}
	s3 := readySpare(t, p, dir)
	// The spare's maker asks for the next after the spare is ready (none,
	// at one spare): wait for it to end, or the sweep may discard s3
	// first and that ask make another.
	poolOf(r).fills.Wait()
	// Idle since: the next sweep makes none.
	advance(time.Hour)
	poolOf(r).expireSpares(p)
	n := spareFolders(p)
	if n != 0 || len(chatFiles(t, home, s3.id)) != 0 {
		t.Fatalf("%d spares after an idle sweep, or a file left", n)
	}
}

func TestWarmSparesGoWithTheProcess(t *testing.T) {
	home := t.TempDir()
	r, _, _, logs := newWarmRunnerLogged(t, geminicli.Options{Env: []string{"GEMINI_CLI_HOME=" + home}}, WarmOptions{Spares: 1, MaxPrompts: 2})
	dir := geminitest.WorkDir(t)
	first, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "first", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	p := onlyProc(t, r)
	s := readySpare(t, p, dir)
	// The reply is the process's second prompt: it is recycled with its
	// spare unused.
	if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "reply", Dir: dir, Session: first.SessionID}); err != nil {
		t.Fatal(err)
	}
	<-p.exited()
	// The process's watch discards the spare once the process has ended.
	if !logs.WaitFor(geminitest.Context(t), `"msg":"discarded a spare session`) {
		t.Fatal("the spare of a recycled process was not discarded")
	}
	n := spareFolders(p)
	if n != 0 || len(chatFiles(t, home, s.id)) != 0 {
		t.Fatalf("%d spares, or the spare's file, left after a recycle", n)
	}
	// The used session's file stays.
	if len(chatFiles(t, home, first.SessionID)) != 1 {
		t.Fatal("the used session's file is gone")
	}
}

func TestUnusedSessionFile(t *testing.T) {
	const id = "c017c77a-1a63-46af-8b70-ca160e2046a0"
	header := `{"sessionId":"` + id + `","projectHash":"3beb","startTime":"2026-11-22T16:28:54.424Z","kind":"main"}`
	context := `{"$set":{"messages":[{"id":"d0","type":"user","content":[{"text":"<session_context>\nThis is the Gemini CLI.</session_context>"}]}],"lastUpdated":"x"}}`
	turn := `{"$set":{"messages":[{"id":"d0","type":"user","content":[{"text":"<session_context>x</session_context>"}]},{"id":"d1","type":"user","content":[{"text":"hi"}]}]}}`
	for _, c := range []struct {
		data string
		want bool
	}{
		{header + "\n" + context + "\n" + header + "\n" + context + "\n", true}, // as the CLI 0.61.0 leaves it
		{header + "\n", true},
		{header + "\n" + turn + "\n", false},
		{strings.Replace(header, id, "c017c77a-0000-46af-8b70-ca160e2046a0", 1) + "\n" + context, false},
		{context, false},
		{header + "\n" + `{"id":"x","type":"gemini"}` + "\n", false},
		{header + "\nnot json\n", false},
	} {
		if got := unusedSessionFile([]byte(c.data), id); got != c.want {
			t.Errorf("unusedSessionFile(%q) = %v", c.data, got)
		}
	}
}

func TestWarmRecyclesAfterMaxSessions(t *testing.T) {
	r, log, acpLog, logs := newWarmRunnerLogged(t, geminicli.Options{}, WarmOptions{MaxSessions: 3, SpareAge: -1})
	// The replacement's start waits for the test, to show that the old
	// process serves meanwhile.
	release := make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce) // before Close, which waits for the start
	starting := make(chan struct{}, 1)
	var starts atomic.Int32
	start := poolOf(r).startProc
	poolOf(r).startProc = func(ctx context.Context, cmd geminicli.Command, key, sys string) (*acpProc, error) {
		switch starts.Add(1) {
		case 1:
		case 2:
			starting <- struct{}{}
			<-release
		default:
			return nil, errors.New("a third process started")
		}
		return start(ctx, cmd, key, sys)
	}
	dir := geminitest.WorkDir(t)
	var ids []string
	for i := 0; i < 3; i++ {
		res, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: fmt.Sprint("chat ", i), Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.SessionID)
	}
	old := onlyProc(t, r)
	// The third session reached the limit: a replacement is starting, and
	// the old process serves on, without a cold start for anyone.
	select {
	case <-starting:
	case <-time.After(30 * time.Second):
		t.Fatal("no replacement started at the session limit")
	}
	res, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "while the replacement starts", Dir: dir, Session: ids[0]})
	if err != nil || res.Via != "warm" || old.isDraining() {
		t.Fatalf("during the replacement: %v, served %s, old process draining: %v", err, res.Via, old.isDraining())
	}
	releaseOnce()
	<-old.exited()
	// The next chat goes to the replacement, warm.
	res, err = r.Run(geminitest.Context(t), backend.Turn{Prompt: "after", Dir: dir})
	if err != nil || res.Via != "warm" {
		t.Fatalf("after the replacement: %v, served %s", err, res.Via)
	}
	started, oneShot := acpStarts(t, log)
	served := promptsByPid(t, acpLog)
	if len(started) != 2 || len(oneShot) != 0 || served[started[0].Pid] != 4 || served[started[1].Pid] != 1 {
		t.Fatalf("%d processes, %d one-shot runs, prompts by process %v", len(started), len(oneShot), served)
	}
	if recs := logRecords(t, logs, "recycling a warm gemini process after its session limit"); len(recs) != 1 || recs[0].Pid != started[0].Pid {
		t.Fatalf("recycle lines %+v", recs)
	}
}

// The start-up of any other gemini run with the same home removes the
// files of sessions that hold no turn, a spare's among them: a spare whose
// file is gone is not used (its turns would be written without the header
// that resume needs).
func TestWarmSpareWhoseFileWasRemoved(t *testing.T) {
	home := t.TempDir()
	r, _, acpLog := newWarmRunner(t, geminicli.Options{Env: []string{"GEMINI_CLI_HOME=" + home}}, WarmOptions{Spares: 1})
	dir := geminitest.WorkDir(t)
	if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "first", Dir: dir}); err != nil {
		t.Fatal(err)
	}
	s := readySpare(t, onlyProc(t, r), dir)
	files := chatFiles(t, home, s.id)
	if len(files) != 1 {
		t.Fatalf("the spare's session file: %v", files)
	}
	if err := os.Remove(files[0]); err != nil {
		t.Fatal(err)
	}
	news := countMethod(t, acpLog, "session/new")
	res, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "second", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if res.SessionID == s.id {
		t.Fatal("a new chat used the spare whose file was removed")
	}
	if files := chatFiles(t, home, res.SessionID); len(files) != 1 {
		t.Fatalf("the new chat's session file: %v", files)
	}
	// Its own session/new, then the next spare's.
	if n := countMethod(t, acpLog, "session/new"); n < news+1 {
		t.Fatalf("%d session/new, want at least %d", n, news+1)
	}
}

// TestWarmNewSessionWaitEndsWithItsCall: a call waiting for the
// session-creation lock, which another call's session/new holds (a wedged
// CLI can hold it until that call's deadline), gives up when its own
// context ends; the process serves on once the lock is free.
func TestWarmNewSessionWaitEndsWithItsCall(t *testing.T) {
	r, _, _ := newWarmRunner(t, geminicli.Options{}, WarmOptions{Spares: 1, Processes: 1})
	p, dir := firstChat(t, r)
	readySpare(t, p, dir)
	if !p.agent.newMu.TryLock() {
		t.Fatal("the session-creation lock is held")
	}
	ctx, cancel := context.WithCancel(geminitest.Context(t))
	done := make(chan error, 1)
	go func() {
		_, err := p.agent.newSession(ctx, geminitest.WorkDir(t), false)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("newSession: %v, want the call's own cancellation", err)
		}
	case <-time.After(30 * time.Second):
		p.agent.newMu.Unlock()
		t.Fatal("a cancelled call still waits for the session-creation lock")
	}
	p.agent.newMu.Unlock()
	if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "after", Dir: geminitest.WorkDir(t)}); err != nil {
		t.Fatalf("the process after the cancelled wait: %v", err)
	}
}

package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/leaktest"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/cli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// newWarmRunner is the warm backend on the fake CLI, limited to the
// default number of turns at once as the server limits it. It returns the
// invocation log and the ACP message log.
func newWarmRunner(t *testing.T, opts geminicli.Options, warm WarmOptions) (backend.Backend, string, string) {
	t.Helper()
	r, log, acpLog, _ := newWarmRunnerLogged(t, opts, warm)
	return r, log, acpLog
}

// newWarmRunnerLogged is newWarmRunner that also returns the server's log,
// as JSON lines.
func newWarmRunnerLogged(t *testing.T, opts geminicli.Options, warm WarmOptions) (backend.Backend, string, string, *geminitest.LockedBuffer) {
	t.Helper()
	return newWarmRunnerSlots(t, config.DefaultMaxConcurrent, opts, warm)
}

// newWarmRunnerSlots is newWarmRunnerLogged with slots turns at once.
func newWarmRunnerSlots(t *testing.T, slots int, opts geminicli.Options, warm WarmOptions) (backend.Backend, string, string, *geminitest.LockedBuffer) {
	t.Helper()
	acpLog := filepath.Join(t.TempDir(), "acp.jsonl")
	env, log := geminitest.TestFakeEnv(t, geminitest.EnvACPLog+"="+acpLog)
	opts.Gemini = fakeGemini
	opts.Env = append(env, opts.Env...)
	logs := &geminitest.LockedBuffer{}
	slog := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	oneShot := cli.NewRunner(opts, slog)
	r := backend.Limit(New(Options{Warm: warm, CLI: opts, Fallback: oneShot}, slog), slots)
	t.Cleanup(func() {
		r.Close()
		// Every process and goroutine of the pool is gone after Close.
		leaktest.VerifyNone(t, leaktest.IgnoreCurrent())
	})
	return r, log, acpLog, logs
}

// logRecord is one line of the server's log.
type logRecord struct {
	Msg          string `json:"msg"`
	Pid          int    `json:"pid"`
	Prompts      int    `json:"prompts"`
	CallsHolding int    `json:"callsHolding"`
}

// logRecords returns the lines of logs whose message starts with prefix.
func logRecords(t *testing.T, logs *geminitest.LockedBuffer, prefix string) []logRecord {
	t.Helper()
	var out []logRecord
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var rec logRecord
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if strings.HasPrefix(rec.Msg, prefix) {
			out = append(out, rec)
		}
	}
	return out
}

// promptsByPid counts the session/prompt requests each --acp process received.
func promptsByPid(t *testing.T, acpLog string) map[int]int {
	t.Helper()
	msgs, err := geminitest.ReadACPLog(acpLog)
	if err != nil {
		t.Fatal(err)
	}
	n := map[int]int{}
	for _, m := range msgs {
		if m.Method == "session/prompt" {
			n[m.Pid]++
		}
	}
	return n
}

// waitExit waits for process pid to end; the deadline only guards against a hang.
func waitExit(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for geminitest.Alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still runs", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// acpStarts counts the --acp processes the fake logged.
func acpStarts(t *testing.T, log string) (warm, oneShot []geminitest.Invocation) {
	for _, inv := range geminitest.Invocations(t, log) {
		if contains(inv.Argv, "--acp") {
			warm = append(warm, inv)
		} else {
			oneShot = append(oneShot, inv)
		}
	}
	return warm, oneShot
}

func TestWarmMatchesOneShot(t *testing.T) {
	// Without spares, so that the count of session/new below is exact
	// (TestWarmSpare* test them).
	warm, wlog, acpLog := newWarmRunner(t, geminicli.Options{}, WarmOptions{SpareAge: -1})
	cold, _ := newTestRunner(t, geminicli.Options{})
	dir := geminitest.WorkDir(t)
	calls := []backend.Turn{
		{Prompt: "-h first", Model: "gemini-x", SystemPrompt: "SYS one", Dir: dir},
		{Prompt: strings.Repeat("big prompt line\n", 10000), Dir: dir},
	}
	for _, c := range calls {
		w, err := warm.Run(geminitest.Context(t), c)
		if err != nil {
			t.Fatal(err)
		}
		o, err := cold.Run(geminitest.Context(t), c)
		if err != nil {
			t.Fatal(err)
		}
		if w.Text != o.Text || w.Via != "warm" || !session.IsUUID(w.SessionID) {
			t.Fatalf("warm %q (%s)\none-shot %q", w.Text, w.Via, o.Text)
		}
		// The reply continues the warm session, in the process that holds
		// it, with the model back at the default as a one-shot reply has.
		w2, err := warm.Run(geminitest.Context(t), backend.Turn{Prompt: "again", Dir: dir, Session: w.SessionID, SystemPrompt: c.SystemPrompt})
		if err != nil {
			t.Fatal(err)
		}
		o2, err := cold.Run(geminitest.Context(t), backend.Turn{Prompt: "again", Dir: dir, Session: o.SessionID, SystemPrompt: c.SystemPrompt})
		if err != nil {
			t.Fatal(err)
		}
		if w2.Text != o2.Text || w2.SessionID != w.SessionID || w2.Via != "warm" {
			t.Fatalf("reply: warm %q (%s)\none-shot %q", w2.Text, w2.Via, o2.Text)
		}
	}
	started, oneShot := acpStarts(t, wlog)
	// One process per system prompt; nothing one-shot.
	if len(started) != 2 || len(oneShot) != 0 {
		t.Fatalf("%d --acp processes, %d one-shot runs", len(started), len(oneShot))
	}
	msgs, _ := geminitest.ReadACPLog(acpLog)
	var news int
	for _, m := range msgs {
		if m.Method == "session/new" {
			news++
		}
	}
	if news != 2 {
		t.Fatalf("%d session/new", news)
	}
}

func TestWarmErrorsMatchOneShot(t *testing.T) {
	warm, _, _ := newWarmRunner(t, geminicli.Options{}, WarmOptions{})
	cold, _ := newTestRunner(t, geminicli.Options{})
	dir := geminitest.WorkDir(t)
	// API failures are per prompt in both modes (auth: TestWarmAuthError).
	for _, prompt := range []string{"[[exit:144]]", "[[exit:173]]", "[[exit:244]]"} {
		_, werr := warm.Run(geminitest.Context(t), backend.Turn{Prompt: prompt, Dir: dir})
		_, oerr := cold.Run(geminitest.Context(t), backend.Turn{Prompt: prompt, Dir: dir})
		var we, oe *backend.Error
		if !errors.As(werr, &we) || !errors.As(oerr, &oe) {
			t.Fatalf("%s: %v / %v", prompt, werr, oerr)
		}
		// A warm process does not exit: its reason names no exit code.
		exit := strings.TrimSuffix(strings.TrimPrefix(prompt, "[[exit:"), "]]")
		if we.Kind != oe.Kind || we.Status != oe.Status || we.Reason != strings.Replace(oe.Reason, " (exit "+exit+")", "", 1) ||
			we.Exited || !oe.Exited || oe.ExitCode != atoi(t, exit) {
			t.Errorf("%s: warm %s %d %q, one-shot %s %d %q", prompt, we.Kind, we.Status, we.Reason, oe.Kind, oe.Status, oe.Reason)
		}
		if we.Stderr != warmStderr {
			t.Errorf("%s: warm stderr %q", prompt, we.Stderr)
		}
	}
}

func TestWarmCancelKeepsTheProcess(t *testing.T) {
	// Without spares, whose session/new could come last in the log.
	r, log, acpLog := newWarmRunner(t, geminicli.Options{}, WarmOptions{SpareAge: -1})
	dir := geminitest.WorkDir(t)
	first, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "start", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// Cancel once the prompt has reached the process.
		for {
			msgs, _ := geminitest.ReadACPLog(acpLog)
			for _, m := range msgs {
				if m.Method == "session/prompt" && strings.Contains(string(m.Params), "[[hang]]") {
					cancel()
					return
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	start := time.Now()
	_, err = r.Run(ctx, backend.Turn{Prompt: "[[hang]]", Dir: dir, Session: first.SessionID})
	var e *backend.Error
	if !errors.As(err, &e) || e.Kind != backend.KindCancelled || !errors.Is(err, context.Canceled) || e.Exited {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("cancel took %v", d)
	}
	msgs, _ := geminitest.ReadACPLog(acpLog)
	if m := msgs[len(msgs)-1]; m.Method != "session/cancel" || m.SessionID() != first.SessionID {
		t.Fatalf("last message %s %s", m.Method, m.SessionID())
	}
	// The process serves on; the cancelled turn was not kept.
	res, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "after", Dir: dir, Session: first.SessionID})
	if err != nil || !strings.HasPrefix(res.Text, "fake-gemini turn=2 ") {
		t.Fatalf("after cancel: %v %+v", err, res)
	}
	if started, _ := acpStarts(t, log); len(started) != 1 {
		t.Fatalf("%d processes", len(started))
	}
}

func TestWarmCrashContinuesOneShot(t *testing.T) {
	r, log, _ := newWarmRunner(t, geminicli.Options{}, WarmOptions{})
	dir := geminitest.WorkDir(t)
	first, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "start", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Run(geminitest.Context(t), backend.Turn{Prompt: "[[crash]]", Dir: dir, Session: first.SessionID})
	var e *backend.Error
	if !errors.As(err, &e) || e.Kind != backend.KindFailed || !strings.Contains(e.Reason, "exited during the call") {
		t.Fatalf("crash: %v", err)
	}
	// The session continues through one-shot resume, its history intact.
	res, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "after the crash", Dir: dir, Session: first.SessionID})
	if err != nil || res.SessionID != first.SessionID || !strings.HasPrefix(res.Text, "fake-gemini turn=2 ") || res.Via == "warm" {
		t.Fatalf("after crash: %v %+v", err, res)
	}
	// A new session gets a new process.
	if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "new", Dir: dir}); err != nil {
		t.Fatal(err)
	}
	started, oneShot := acpStarts(t, log)
	if len(started) != 2 || len(oneShot) != 1 || !contains(oneShot[0].Argv, first.SessionID) {
		t.Fatalf("%d processes, one-shot runs %v", len(started), oneShot)
	}
}

func TestWarmRecyclesAfterMaxPrompts(t *testing.T) {
	r, log, _ := newWarmRunner(t, geminicli.Options{}, WarmOptions{MaxPrompts: 2})
	dir := geminitest.WorkDir(t)
	a, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "one", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "two", Dir: dir, Session: a.SessionID}); err != nil {
		t.Fatal(err)
	}
	// The first process has served its two prompts and is retired.
	started, _ := acpStarts(t, log)
	deadline := time.Now().Add(5 * time.Second)
	for geminitest.Alive(started[0].Pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if geminitest.Alive(started[0].Pid) {
		t.Fatal("the process outlived its prompt limit")
	}
	res, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "three", Dir: dir, Session: a.SessionID})
	if err != nil || res.Via == "warm" || !strings.HasPrefix(res.Text, "fake-gemini turn=3 ") {
		t.Fatalf("after recycling: %v %+v", err, res)
	}
	if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "four", Dir: dir}); err != nil {
		t.Fatal(err)
	}
	if started, _ := acpStarts(t, log); len(started) != 2 {
		t.Fatalf("%d processes, want a fresh one after recycling", len(started))
	}
}

func TestWarmPermissions(t *testing.T) {
	deny, _, _ := newWarmRunner(t, geminicli.Options{}, WarmOptions{})
	res, err := deny.Run(geminitest.Context(t), backend.Turn{Prompt: "write it [[permission]]", Dir: geminitest.WorkDir(t)})
	if err != nil || !strings.HasSuffix(res.Text, " permission=cancel") {
		t.Fatalf("default policy: %v %+v", err, res)
	}
}

func TestWarmLatestGoesOneShotAndReleases(t *testing.T) {
	r, log, _ := newWarmRunner(t, geminicli.Options{}, WarmOptions{})
	dir := geminitest.WorkDir(t)
	a, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "one", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "two", Dir: dir, Session: "latest"})
	if err != nil || res.SessionID != a.SessionID || res.Via == "warm" {
		t.Fatalf("latest: %v %+v", err, res)
	}
	// The one-shot turn took the session from its process for good.
	res, err = r.Run(geminitest.Context(t), backend.Turn{Prompt: "three", Dir: dir, Session: a.SessionID})
	if err != nil || res.Via == "warm" || !strings.HasPrefix(res.Text, "fake-gemini turn=3 ") {
		t.Fatalf("after latest: %v %+v", err, res)
	}
	if _, oneShot := acpStarts(t, log); len(oneShot) != 2 {
		t.Fatalf("%d one-shot runs", len(oneShot))
	}
}

func TestWarmSystemPromptsShareAOneProcessPool(t *testing.T) {
	r, log, _ := newWarmRunner(t, geminicli.Options{}, WarmOptions{Processes: 1})
	dir := geminitest.WorkDir(t)
	for i, sys := range []string{"SYS A", "SYS B", "SYS A"} {
		res, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "hi", SystemPrompt: sys, Dir: dir})
		if err != nil || !strings.Contains(res.Text, "system="+sys+" ") || res.Via != "warm" {
			t.Fatalf("call %d: %v %+v", i, err, res)
		}
	}
	// With room for one process, each new system prompt retires the idle
	// process of the last one.
	started, _ := acpStarts(t, log)
	if len(started) != 3 {
		t.Fatalf("%d processes", len(started))
	}
	for _, p := range started[:2] {
		if geminitest.Alive(p.Pid) {
			t.Fatalf("retired process %d still runs", p.Pid)
		}
	}
}

// TestWarmRecycleUnderLoad recycles processes while many calls are in
// flight: no call may be cut off by a recycle. How many calls go one-shot
// (when every process is draining) depends on timing; what recycling
// guarantees does not, and that is what is checked.
func TestWarmRecycleUnderLoad(t *testing.T) {
	const maxPrompts = 5
	r, log, acpLog, logs := newWarmRunnerSlots(t, 16, geminicli.Options{}, WarmOptions{MaxPrompts: maxPrompts, Processes: 2})
	dir := geminitest.WorkDir(t)
	errs := make(chan error, 200)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 20; j++ {
				if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: fmt.Sprintf("load %d %d [[sleep:2]]", i, j), Dir: dir}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	started, oneShot := acpStarts(t, log)
	served := promptsByPid(t, acpLog)
	recycled := map[int]logRecord{}
	for _, rec := range logRecords(t, logs, "recycling a warm gemini process") {
		if _, twice := recycled[rec.Pid]; twice {
			t.Errorf("process %d: recycling logged twice", rec.Pid)
		}
		recycled[rec.Pid] = rec
	}
	warmPrompts := 0
	for _, p := range started {
		n := served[p.Pid]
		warmPrompts += n
		rec, ok := recycled[p.Pid]
		switch {
		case n < maxPrompts && ok:
			t.Errorf("process %d recycled after %d prompts", p.Pid, n)
		case n < maxPrompts:
			if !geminitest.Alive(p.Pid) {
				t.Errorf("process %d ended after %d prompts without being recycled", p.Pid, n)
			}
		case !ok:
			t.Errorf("process %d served %d prompts and was not recycled", p.Pid, n)
		default:
			// A recycled process takes no new call: it serves at most the
			// calls that held it when it reached its limit, the one that
			// reached it included, and then it ends.
			if rec.Prompts < maxPrompts || n > maxPrompts+rec.CallsHolding-1 {
				t.Errorf("process %d served %d prompts; limit reached at %d with %d calls holding it", p.Pid, n, rec.Prompts, rec.CallsHolding)
			}
			waitExit(t, p.Pid)
		}
	}
	// Until both processes drain, every call is served warm: 160 prompts
	// cannot all go one-shot, and at least one process reached its limit.
	if warmPrompts == 0 || len(recycled) == 0 {
		t.Fatalf("%d warm prompts, %d processes recycled", warmPrompts, len(recycled))
	}
	if warmPrompts+len(oneShot) != 160 {
		t.Errorf("%d warm prompts and %d one-shot runs for 160 calls", warmPrompts, len(oneShot))
	}
	t.Logf("%d processes, %d recycled, %d warm prompts, %d one-shot runs", len(started), len(recycled), warmPrompts, len(oneShot))
}

// TestWarmRecycleLogsOnce: the recycle is logged once, by the prompt that
// decides it, and never for a process that stays.
func TestWarmRecycleLogsOnce(t *testing.T) {
	// Without spares, so that no second process starts (see pool.grow)
	// and the first serves every prompt until its limit.
	r, log, _, logs := newWarmRunnerLogged(t, geminicli.Options{}, WarmOptions{MaxPrompts: 3, SpareAge: -1})
	dir := geminitest.WorkDir(t)
	for i := 1; i <= 4; i++ {
		if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: fmt.Sprint("prompt ", i), Dir: dir}); err != nil {
			t.Fatal(err)
		}
		recs := logRecords(t, logs, "recycling a warm gemini process")
		want := 0
		if i >= 3 {
			want = 1
		}
		if len(recs) != want {
			t.Fatalf("after prompt %d: %d recycle lines %+v", i, len(recs), recs)
		}
	}
	started, _ := acpStarts(t, log)
	rec := logRecords(t, logs, "recycling a warm gemini process after its prompt limit")
	if len(started) != 2 || len(rec) != 1 || rec[0].Pid != started[0].Pid || rec[0].Prompts != 3 {
		t.Fatalf("%d processes, recycle lines %+v", len(started), rec)
	}
	waitExit(t, started[0].Pid)

	// Past the memory limit, the first prompt's check recycles (where the
	// system tells a process's memory).
	if runtime.GOOS != "linux" {
		return
	}
	r, log, _, logs = newWarmRunnerLogged(t, geminicli.Options{}, WarmOptions{MaxRSS: 1})
	for i := 1; i <= 2; i++ {
		if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: fmt.Sprint("prompt ", i), Dir: dir}); err != nil {
			t.Fatal(err)
		}
	}
	started, _ = acpStarts(t, log)
	recs := logRecords(t, logs, "recycling a warm gemini process")
	if len(started) != 2 || len(recs) != 2 || recs[0].Pid != started[0].Pid || recs[1].Pid != started[1].Pid ||
		!strings.Contains(recs[0].Msg, "memory limit") {
		t.Fatalf("%d processes, recycle lines %+v", len(started), recs)
	}
}

// TestWarmOutputCap: the warm backend caps an answer as the one-shot
// backend caps stdout, with the same error, and keeps the process.
func TestWarmOutputCap(t *testing.T) {
	const limit = 100000
	// The process must confirm each cancel, however busy the machine: a
	// grace of a minute, not the default 1.5 s after which an unconfirmed
	// cancel stops the process (and "after" below goes to the one-shot
	// path).
	r, log, acpLog := newWarmRunner(t, geminicli.Options{MaxOutputBytes: limit, KillGrace: time.Minute}, WarmOptions{})
	cold, _ := newTestRunner(t, geminicli.Options{MaxOutputBytes: limit})
	dir := geminitest.WorkDir(t)
	first, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "start", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	_, oerr := cold.Run(geminitest.Context(t), backend.Turn{Prompt: "[[stdout:1000000]]", Dir: dir})
	var oe *backend.Error
	if !errors.As(oerr, &oe) || oe.Kind != backend.KindOutputTooBig {
		t.Fatalf("one-shot: %v", oerr)
	}
	// Many small chunks, then one message far past the limit (read past,
	// not into memory).
	// [[holdend]] keeps the turn open until it is cancelled.
	for _, prompt := range []string{"[[stdout:1000000]] [[chunks:100]] [[holdend]]", "[[stdout:3000000]] [[holdend]]"} {
		_, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: prompt, Dir: dir, Session: first.SessionID})
		var e *backend.Error
		if !errors.As(err, &e) || e.Kind != backend.KindOutputTooBig || e.Reason != oe.Reason {
			t.Fatalf("%s: warm %v, one-shot %v", prompt, err, oerr)
		}
		msgs, _ := geminitest.ReadACPLog(acpLog)
		if m := msgs[len(msgs)-1]; m.Method != "session/cancel" || m.SessionID() != first.SessionID {
			t.Fatalf("%s: last message %s %s", prompt, m.Method, m.SessionID())
		}
	}
	// The process serves on.
	res, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "after", Dir: dir, Session: first.SessionID})
	if err != nil || res.Via != "warm" {
		t.Fatalf("after the cap: %v %+v", err, res)
	}
	if started, _ := acpStarts(t, log); len(started) != 1 {
		t.Fatalf("%d processes", len(started))
	}
}

func TestReadLine(t *testing.T) {
	long := strings.Repeat("x", 100)
	br := bufio.NewReaderSize(strings.NewReader("short\n"+long+"\nlast"), 16)
	line, isLong, err := readLine(br, 50, nil)
	if string(line) != "short" || isLong || err != nil {
		t.Fatalf("short line: %q %v %v", line, isLong, err)
	}
	// A line past the limit: its start, and the reader past its end.
	line, isLong, err = readLine(br, 50, nil)
	if !isLong || err != nil || len(line) <= 50 || !strings.HasPrefix(long, string(line)) {
		t.Fatalf("long line: %q %v %v", line, isLong, err)
	}
	line, isLong, err = readLine(br, 50, nil)
	if string(line) != "last" || isLong || !errors.Is(err, io.EOF) {
		t.Fatalf("last line: %q %v %v", line, isLong, err)
	}
}

// TestWarmAuthError: without credentials the real CLI's --acp process
// starts, then fails every session/new; the warm error is an auth error
// that says what to do, as the one-shot one is.
func TestWarmAuthError(t *testing.T) {
	noKey := geminitest.EnvNoAPIKey + "=1"
	warm, _, _ := newWarmRunner(t, geminicli.Options{Env: []string{noKey}}, WarmOptions{})
	cold, _ := newTestRunner(t, geminicli.Options{}, noKey)
	dir := geminitest.WorkDir(t)
	_, werr := warm.Run(geminitest.Context(t), backend.Turn{Prompt: "hi", Dir: dir})
	_, oerr := cold.Run(geminitest.Context(t), backend.Turn{Prompt: "hi", Dir: dir})
	for name, err := range map[string]error{"warm": werr, "one-shot": oerr} {
		var e *backend.Error
		if !errors.As(err, &e) || e.Kind != backend.KindAuth || !strings.HasSuffix(e.Reason, geminicli.AuthHelp) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if !strings.Contains(werr.Error(), geminitest.ACPNoAPIKeyMessage) {
		t.Errorf("warm: %v", werr)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestWarmTimeout: a warm call stopped at --timeout is a timeout, which
// errors.Is tells apart from a cancel.
func TestWarmTimeout(t *testing.T) {
	r, _, _ := newWarmRunner(t, geminicli.Options{Timeout: 300 * time.Millisecond}, WarmOptions{})
	_, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "[[hang]]", Dir: geminitest.WorkDir(t)})
	var e *backend.Error
	if !errors.As(err, &e) || e.Kind != backend.KindTimeout || !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		!strings.Contains(e.Reason, "--timeout") || e.Exited {
		t.Fatalf("got %v", err)
	}
}

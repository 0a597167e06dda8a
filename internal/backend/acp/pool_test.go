package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/cli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// newWarmRunner is the warm backend on the fake CLI, limited to the
// default number of turns at once as the server limits it. It returns the
// invocation log and the ACP message log.
func newWarmRunner(t *testing.T, opts cli.Options, warm WarmOptions) (backend.Backend, string, string) {
	t.Helper()
	r, log, acpLog, _ := newWarmRunnerLogged(t, opts, warm)
	return r, log, acpLog
}

// newWarmRunnerLogged is newWarmRunner that also returns the server's log,
// as JSON lines.
func newWarmRunnerLogged(t *testing.T, opts cli.Options, warm WarmOptions) (backend.Backend, string, string, *geminitest.LockedBuffer) {
	t.Helper()
	return newWarmRunnerSlots(t, backend.DefaultMaxConcurrent, opts, warm)
}

// newWarmRunnerSlots is newWarmRunnerLogged with slots turns at once.
func newWarmRunnerSlots(t *testing.T, slots int, opts cli.Options, warm WarmOptions) (backend.Backend, string, string, *geminitest.LockedBuffer) {
	t.Helper()
	acpLog := filepath.Join(t.TempDir(), "acp.jsonl")
	env, log := geminitest.TestFakeEnv(t, geminitest.EnvACPLog+"="+acpLog)
	opts.Gemini = fakeGemini
	opts.Env = append(env, opts.Env...)
	logs := &geminitest.LockedBuffer{}
	slog := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	oneShot := cli.NewRunner(opts, slog)
	r := backend.Limit(New(ConfigFor(opts, warm, oneShot), slog), slots)
	t.Cleanup(func() {
		r.Close()
		// Every process and goroutine of the pool is gone after Close.
		goleak.VerifyNone(t, goleak.IgnoreCurrent())
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
	warm, wlog, acpLog := newWarmRunner(t, cli.Options{}, WarmOptions{SpareAge: -1})
	cold, _ := newTestRunner(t, cli.Options{})
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
	warm, _, _ := newWarmRunner(t, cli.Options{}, WarmOptions{})
	cold, _ := newTestRunner(t, cli.Options{})
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
	r, log, acpLog := newWarmRunner(t, cli.Options{}, WarmOptions{SpareAge: -1})
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
	r, log, _ := newWarmRunner(t, cli.Options{}, WarmOptions{})
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
	r, log, _ := newWarmRunner(t, cli.Options{}, WarmOptions{MaxPrompts: 2})
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
	deny, _, _ := newWarmRunner(t, cli.Options{}, WarmOptions{})
	res, err := deny.Run(geminitest.Context(t), backend.Turn{Prompt: "write it [[permission]]", Dir: geminitest.WorkDir(t)})
	if err != nil || !strings.HasSuffix(res.Text, " permission=cancel") {
		t.Fatalf("default policy: %v %+v", err, res)
	}
}

func TestWarmLatestGoesOneShotAndReleases(t *testing.T) {
	r, log, _ := newWarmRunner(t, cli.Options{}, WarmOptions{})
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
	r, log, _ := newWarmRunner(t, cli.Options{}, WarmOptions{Processes: 1})
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

func TestWarmIdleProcessStops(t *testing.T) {
	r, log, _ := newWarmRunner(t, cli.Options{}, WarmOptions{IdleTimeout: 200 * time.Millisecond})
	if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "one", Dir: geminitest.WorkDir(t)}); err != nil {
		t.Fatal(err)
	}
	started, _ := acpStarts(t, log)
	deadline := time.Now().Add(5 * time.Second)
	for geminitest.Alive(started[0].Pid) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if geminitest.Alive(started[0].Pid) {
		t.Fatal("an idle process was kept past the idle timeout")
	}
}

// TestWarmRecycleUnderLoad recycles processes while many calls are in
// flight: no call may be cut off by a recycle. How many calls go one-shot
// (when every process is draining) depends on timing; what recycling
// guarantees does not, and that is what is checked.
func TestWarmRecycleUnderLoad(t *testing.T) {
	const maxPrompts = 5
	r, log, acpLog, logs := newWarmRunnerSlots(t, 16, cli.Options{}, WarmOptions{MaxPrompts: maxPrompts, Processes: 2})
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
	r, log, _, logs := newWarmRunnerLogged(t, cli.Options{}, WarmOptions{MaxPrompts: 3})
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
	r, log, _, logs = newWarmRunnerLogged(t, cli.Options{}, WarmOptions{MaxRSS: 1})
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
	r, log, acpLog := newWarmRunner(t, cli.Options{MaxOutputBytes: limit}, WarmOptions{})
	cold, _ := newTestRunner(t, cli.Options{MaxOutputBytes: limit})
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
	if string(line) != "last" || isLong || err != io.EOF {
		t.Fatalf("last line: %q %v %v", line, isLong, err)
	}
}

// TestWarmAuthError: without credentials the real CLI's --acp process
// starts, then fails every session/new; the warm error is an auth error
// that says what to do, as the one-shot one is.
func TestWarmAuthError(t *testing.T) {
	noKey := geminitest.EnvNoAPIKey + "=1"
	warm, _, _ := newWarmRunner(t, cli.Options{Env: []string{noKey}}, WarmOptions{})
	cold, _ := newTestRunner(t, cli.Options{}, noKey)
	dir := geminitest.WorkDir(t)
	_, werr := warm.Run(geminitest.Context(t), backend.Turn{Prompt: "hi", Dir: dir})
	_, oerr := cold.Run(geminitest.Context(t), backend.Turn{Prompt: "hi", Dir: dir})
	for name, err := range map[string]error{"warm": werr, "one-shot": oerr} {
		var e *backend.Error
		if !errors.As(err, &e) || e.Kind != backend.KindAuth || !strings.HasSuffix(e.Reason, cli.AuthHelp) {
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
	r, _, _ := newWarmRunner(t, cli.Options{Timeout: 300 * time.Millisecond}, WarmOptions{})
	_, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "[[hang]]", Dir: geminitest.WorkDir(t)})
	var e *backend.Error
	if !errors.As(err, &e) || e.Kind != backend.KindTimeout || !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) ||
		!strings.Contains(e.Reason, "--timeout") || e.Exited {
		t.Fatalf("got %v", err)
	}
}

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
	warm, _, acpLog := newWarmRunner(t, cli.Options{Env: []string{"GEMINI_CLI_HOME=" + home}}, WarmOptions{})
	cold, _ := newTestRunner(t, cli.Options{})
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
	r, _, acpLog := newWarmRunner(t, cli.Options{}, WarmOptions{})
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
	p.mu.Lock()
	busySpares := len(p.spares)
	p.mu.Unlock()
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
	r, _, acpLog := newWarmRunner(t, cli.Options{}, WarmOptions{})
	dir := geminitest.WorkDir(t)
	if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "first", Dir: dir}); err != nil {
		t.Fatal(err)
	}
	p := onlyProc(t, r)
	readySpare(t, p, dir)
	// A call creating a session holds the lock (the test stands in for
	// it): a spare asked for meanwhile is not made, rather than queue.
	other := geminitest.WorkDir(t)
	news := countMethod(t, acpLog, "session/new")
	p.newMu.Lock()
	s := poolOf(r).refill(p, other)
	select {
	case <-s.ready:
		p.newMu.Unlock()
	case <-time.After(30 * time.Second):
		p.newMu.Unlock()
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
		defer p.done()
		id, err := poolOf(r).session(geminitest.Context(t), p, other)
		if err != nil {
			t.Error(err)
		}
		res <- id
	}()
	id, err := p.newSession(geminitest.Context(t), other, false)
	if err != nil {
		t.Fatal(err)
	}
	pending.id, pending.made = id, poolOf(r).now()
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
	r, _, _ := newWarmRunner(t, cli.Options{Env: []string{"GEMINI_CLI_HOME=" + home}}, WarmOptions{SpareAge: time.Hour})
	var mu sync.Mutex
	now := time.Now()
	poolOf(r).now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	advance := func(d time.Duration) {
		mu.Lock()
		now = now.Add(d)
		mu.Unlock()
	}
	dir := geminitest.WorkDir(t)
	if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "first", Dir: dir}); err != nil {
		t.Fatal(err)
	}
	p := onlyProc(t, r)
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
	if _, err := r.Run(geminitest.Context(t), backend.Turn{Prompt: "reply", Dir: dir, Session: res.SessionID}); err != nil {
		t.Fatal(err)
	}
	advance(time.Hour)
	poolOf(r).expireSpares(p)
	if files := chatFiles(t, home, s2.id); len(files) != 0 {
		t.Fatalf("the swept spare's file is left: %v", files)
	}
	s3 := readySpare(t, p, dir)
	// Idle since: the next sweep makes none.
	advance(time.Hour)
	poolOf(r).expireSpares(p)
	p.mu.Lock()
	n := len(p.spares)
	p.mu.Unlock()
	if n != 0 || len(chatFiles(t, home, s3.id)) != 0 {
		t.Fatalf("%d spares after an idle sweep, or a file left", n)
	}
}

func TestWarmSparesGoWithTheProcess(t *testing.T) {
	home := t.TempDir()
	r, _, _, logs := newWarmRunnerLogged(t, cli.Options{Env: []string{"GEMINI_CLI_HOME=" + home}}, WarmOptions{MaxPrompts: 2})
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
	<-p.dead
	// The process's watch discards the spare once the process has ended.
	if !logs.WaitFor(geminitest.Context(t), `"msg":"discarded a spare session`) {
		t.Fatal("the spare of a recycled process was not discarded")
	}
	p.mu.Lock()
	n := len(p.spares)
	p.mu.Unlock()
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
	r, log, acpLog, logs := newWarmRunnerLogged(t, cli.Options{}, WarmOptions{MaxSessions: 3, SpareAge: -1})
	// The replacement's start waits for the test, to show that the old
	// process serves meanwhile.
	release := make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce) // before Close, which waits for the start
	starting := make(chan struct{}, 1)
	var starts atomic.Int32
	start := poolOf(r).startProc
	poolOf(r).startProc = func(ctx context.Context, cmd cli.Command, key, sys string) (*acpProc, error) {
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
	<-old.dead
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
	r, _, acpLog := newWarmRunner(t, cli.Options{Env: []string{"GEMINI_CLI_HOME=" + home}}, WarmOptions{})
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

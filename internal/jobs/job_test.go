package jobs

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var t0 = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func newJob(t *testing.T) Job {
	t.Helper()
	j, err := New("token:alice", "chat", time.Hour, t0)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// TestLifecycle walks a job through every status it may take, and checks
// that each step keeps a record a store accepts.
func TestLifecycle(t *testing.T) {
	j := newJob(t)
	if j.Status != Queued || !j.Expires.Equal(t0.Add(time.Hour)) || CheckID(j.ID) != nil {
		t.Fatalf("a new job: %+v", j)
	}
	steps := []struct {
		name string
		do   func(now time.Time) error
		want Status
	}{
		{"start", j.Start, Working},
		{"report", func(now time.Time) error { return j.Report("planning", 1, 4, now) }, Working},
		{"partial", func(now time.Time) error { return j.SetPartial("so far", now) }, Working},
		{"resume handle", func(now time.Time) error { return j.SetResume("v1_abc", now) }, Working},
		{"ask", func(now time.Time) error { return j.AskInput("approve the plan?", now) }, InputRequired},
		{"resumed", j.Resumed, Working},
		{"complete", func(now time.Time) error {
			return j.Complete(&mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, now)
		}, Completed},
	}
	for i, s := range steps {
		now := t0.Add(time.Duration(i+1) * time.Minute)
		if err := s.do(now); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if j.Status != s.want || !j.Updated.Equal(now) || !j.Expires.Equal(now.Add(time.Hour)) {
			t.Fatalf("after %s: %s, updated %v, expires %v", s.name, j.Status, j.Updated, j.Expires)
		}
		if err := j.Check(); err != nil {
			t.Fatalf("after %s: %v", s.name, err)
		}
	}
	res, err := j.CallToolResult()
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "done" || j.Partial != "" {
		t.Fatalf("the result: %v, %v; partial %q", res, err, j.Partial)
	}
	// A finished job changes no more.
	for name, do := range map[string]func() error{
		"start":   func() error { return j.Start(t0) },
		"fail":    func() error { return j.Fail("x", t0) },
		"cancel":  func() error { return j.Cancelled(t0) },
		"partial": func() error { return j.SetPartial("x", t0) },
	} {
		if err := do(); !errors.Is(err, ErrFinal) {
			t.Errorf("%s of a completed job: %v", name, err)
		}
	}
	if j.RequestCancel(t0) || j.Status != Completed {
		t.Error("a cancel changed a completed job")
	}
}

// TestStepsOutOfOrder: a step the status does not allow is refused and
// changes nothing.
func TestStepsOutOfOrder(t *testing.T) {
	j := newJob(t)
	before := j
	if j.Report("x", 1, 1, t0) == nil || j.AskInput("?", t0) == nil || j.Resumed(t0) == nil ||
		j.Complete(&mcp.CallToolResult{}, t0) == nil {
		t.Fatal("a queued job took a running job's step")
	}
	if err := j.Start(t0); err != nil {
		t.Fatal(err)
	}
	if j.Start(t0) == nil || j.Complete(nil, t0) == nil || j.Report("x", -1, 0, t0) == nil {
		t.Fatal("a working job started again, completed with nothing or went backwards")
	}
	j = before
	if err := j.Fail("", t0); err != nil || j.Error == "" || j.Check() != nil {
		t.Fatalf("a failure without words: %v, %q", err, j.Error)
	}
}

// TestCancel: a queued job is cancelled at once; a running one is asked
// to stop; asking twice changes nothing more.
func TestCancel(t *testing.T) {
	j := newJob(t)
	if !j.RequestCancel(t0) || j.Status != Cancelled {
		t.Fatalf("a queued job's cancel: %s", j.Status)
	}
	j = newJob(t)
	_ = j.Start(t0)
	if !j.RequestCancel(t0) || j.Status != Working || !j.CancelRequested {
		t.Fatalf("a working job's cancel: %s, requested %v", j.Status, j.CancelRequested)
	}
	if j.RequestCancel(t0.Add(time.Second)) || !j.Updated.Equal(t0) {
		t.Fatal("a second cancel changed the job")
	}
	if err := j.Cancelled(t0); err != nil || j.Status != Cancelled {
		t.Fatalf("the runner's stop: %v", err)
	}
}

// TestCaps: every part is capped; a result over its cap is refused.
func TestCaps(t *testing.T) {
	j := newJob(t)
	_ = j.Start(t0)
	long := strings.Repeat("é", MaxPartialBytes) // two bytes a rune
	if err := j.SetPartial(long, t0); err != nil {
		t.Fatal(err)
	}
	if len(j.Partial) != MaxPartialBytes || j.PartialDropped != len(long)-MaxPartialBytes {
		t.Fatalf("partial kept %d bytes, dropped %d", len(j.Partial), j.PartialDropped)
	}
	if err := j.SetPartial("x"+long, t0); err != nil || len(j.Partial) != MaxPartialBytes-1 {
		t.Fatalf("a cut inside a rune: %d bytes kept, %v", len(j.Partial), err)
	}
	_ = j.Report(strings.Repeat("m", 2*MaxMessageBytes), 0, 0, t0)
	if len(j.Message) != MaxMessageBytes {
		t.Fatalf("message of %d bytes", len(j.Message))
	}
	if j.SetResume(strings.Repeat("r", MaxResumeBytes+1), t0) == nil {
		t.Fatal("an oversized resume handle was kept")
	}
	big := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", MaxResultBytes)}}}
	if err := j.Complete(big, t0); err == nil || j.Status != Working || j.Result != nil {
		t.Fatalf("an oversized result: %v, status %s", err, j.Status)
	}
	if j.SetResultMeta(map[string]any{"filesProcessed": strings.Repeat("f", MaxResultMetaBytes)}, t0) == nil || j.ResultMeta != nil {
		t.Fatal("an oversized result _meta was kept")
	}
	if err := j.SetResultMeta(map[string]any{"filesProcessed": []string{"a.txt"}}, t0); err != nil ||
		string(j.ResultMeta) != `{"filesProcessed":["a.txt"]}` || j.Check() != nil {
		t.Fatalf("the result's _meta: %s, %v, %v", j.ResultMeta, err, j.Check())
	}
	if err := j.Fail(strings.Repeat("e", 2*MaxErrorBytes), t0); err != nil || len(j.Error) != MaxErrorBytes {
		t.Fatalf("error of %d bytes, %v", len(j.Error), err)
	}
}

// TestCheck refuses records a store must not keep.
func TestCheck(t *testing.T) {
	for name, spoil := range map[string]func(*Job){
		"id":        func(j *Job) { j.ID = "1" },
		"upper id":  func(j *Job) { j.ID = strings.ToUpper(j.ID) },
		"status":    func(j *Job) { j.Status = "running" },
		"tool":      func(j *Job) { j.Tool = "" },
		"long tool": func(j *Job) { j.Tool = strings.Repeat("t", MaxToolBytes+1) },
		"ttl":       func(j *Job) { j.TTL, j.Expires = 0, j.Updated },
		"expires":   func(j *Job) { j.Expires = j.Expires.Add(time.Hour) },
		"result":    func(j *Job) { j.Result = []byte(`{}`) },
		"error":     func(j *Job) { j.Error = "x" },
		"owner":     func(j *Job) { j.Owner = strings.Repeat("o", MaxOwnerBytes+1) },
		"partial":   func(j *Job) { j.Partial = strings.Repeat("p", MaxPartialBytes+1) },
		"meta list": func(j *Job) { j.ResultMeta = []byte(`["x"]`) },
		"meta JSON": func(j *Job) { j.ResultMeta = []byte(`{"x":`) },
		"meta long": func(j *Job) { j.ResultMeta = []byte(`{"x":"` + strings.Repeat("m", MaxResultMetaBytes) + `"}`) },
	} {
		j := newJob(t)
		spoil(&j)
		if j.Check() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := New("", "", time.Hour, t0); err == nil {
		t.Error("a job of no tool")
	}
	if j, err := New("", "chat", 0, t0); err != nil || j.TTL <= 0 {
		t.Errorf("the default TTL: %v, %v", j.TTL, err)
	}
}

// TestTask: the Tasks extension's view of a job; queued shows as working.
func TestTask(t *testing.T) {
	j := newJob(t)
	task := j.Task(2 * time.Second)
	if task.TaskID != j.ID || task.Status != "working" || task.TTLMs != 3600000 || task.PollIntervalMs != 2000 ||
		task.CreatedAt != "2026-11-28T12:00:00Z" {
		t.Fatalf("%+v", task)
	}
	for _, s := range []Status{Working, InputRequired, Completed, Failed, Cancelled} {
		if s.TaskStatus() != string(s) {
			t.Errorf("%s shows as %s", s, s.TaskStatus())
		}
	}
}

// TestFailRPCAndStale: a job failed with a JSON-RPC error keeps it, as
// JSON within its cap and only when failed; a running job is stale once
// unchanged for over StaleAfter, a finished one never.
func TestFailRPCAndStale(t *testing.T) {
	j := newJob(t)
	if err := j.Start(t0); err != nil {
		t.Fatal(err)
	}
	if err := j.FailRPC("bad", []byte(`{"code":-32602`), t0); err == nil || j.Status != Working {
		t.Errorf("a JSON-RPC error that is not JSON: %v, status %s", err, j.Status)
	}
	if err := j.FailRPC("big", []byte(`"`+strings.Repeat("x", MaxRPCErrorBytes)+`"`), t0); err == nil || j.Status != Working {
		t.Errorf("a JSON-RPC error over its cap: %v, status %s", err, j.Status)
	}
	if !j.Stale(t0.Add(StaleAfter+time.Second)) || j.Stale(t0.Add(StaleAfter)) {
		t.Error("a running job's staleness")
	}
	rpc := []byte(`{"code":-32602,"message":"bad"}`)
	if err := j.FailRPC("bad", rpc, t0); err != nil || j.Status != Failed || string(j.RPCError) != string(rpc) || j.Check() != nil {
		t.Errorf("FailRPC: %v %s %s %v", err, j.Status, j.RPCError, j.Check())
	}
	if j.Stale(t0.Add(time.Hour)) {
		t.Error("a finished job is stale")
	}
	k := newJob(t)
	k.RPCError = rpc
	if k.Check() == nil {
		t.Error("a queued job with a JSON-RPC error passed Check")
	}
}

// TestPartialTail: a running job's live output keeps its end, cut at a
// rune's start, with the bytes before it counted; the output's start
// (SetPartial) replaces it; completing clears it; a finished job takes
// none.
func TestPartialTail(t *testing.T) {
	j := newJob(t)
	if err := j.Start(t0); err != nil {
		t.Fatal(err)
	}
	text := "x" + strings.Repeat("é", MaxPartialTailBytes/2) + "y" // two bytes over: the cap's start is inside the first é
	if err := j.SetPartialTail(text, t0); err != nil {
		t.Fatal(err)
	}
	if want := strings.Repeat("é", MaxPartialTailBytes/2-1) + "y"; j.Partial != want || j.PartialDropped != 3 || !j.PartialTail || j.Check() != nil {
		t.Errorf("the tail kept: %d bytes (tail %v), %d dropped, check %v", len(j.Partial), j.PartialTail, j.PartialDropped, j.Check())
	}
	if err := j.SetPartialTail("short", t0); err != nil || j.Partial != "short" || j.PartialDropped != 0 {
		t.Errorf("a short tail: %q, %d dropped, %v", j.Partial, j.PartialDropped, err)
	}
	if err := j.SetPartialTailAfter("é"+strings.Repeat("t", MaxPartialTailBytes-1), 100, t0); err != nil ||
		j.Partial != strings.Repeat("t", MaxPartialTailBytes-1) || j.PartialDropped != 102 {
		t.Errorf("a tail after 100 bytes not given: %d bytes kept, %d dropped, %v", len(j.Partial), j.PartialDropped, err)
	}
	if err := j.SetPartial("the start", t0); err != nil || j.PartialTail {
		t.Errorf("the output's start is marked a tail (%v)", err)
	}
	_ = j.SetPartialTail("the end", t0)
	if err := j.Complete(&mcp.CallToolResult{}, t0); err != nil || j.Partial != "" || j.PartialTail {
		t.Errorf("completed: partial %q, tail %v, %v", j.Partial, j.PartialTail, err)
	}
	if err := j.SetPartialTail("late", t0); !errors.Is(err, ErrFinal) {
		t.Errorf("a finished job's live output: %v", err)
	}
}

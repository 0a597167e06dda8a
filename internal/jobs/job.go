// Package jobs is the record of a background job — a tool call run apart
// from the request that started it, so that a client can come back for
// its progress and result, on any replica, after the request (or the
// process that ran it) is gone — its lifecycle, and the interface of the
// stores that keep it (Store, implemented by the session stores: embedded,
// Redis and memory; all pass the suite in internal/jobs/jobstest).
//
// A job's status maps onto the MCP Tasks extension's (SEP-2663) one to one
// but for Queued, which the extension has no word for and calls working:
//
//	Queued        → working (accepted, not started: the extension's task exists from tools/call on)
//	Working       → working
//	InputRequired → input_required
//	Completed     → completed
//	Failed        → failed
//	Cancelled     → cancelled
//
// and the record holds the rest of a task: taskId (ID), createdAt
// (Created), lastUpdatedAt (Updated), ttlMs (TTL), statusMessage
// (Message), the result inline (Result) or the error (Error). See Task.
package jobs

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// Status is where a job is in its lifecycle:
//
//	Queued → Working ⇄ InputRequired
//	Queued, Working, InputRequired → Completed, Failed, Cancelled
//
// Completed, Failed and Cancelled are final: a job in one never changes
// status again.
type Status string

const (
	// Queued is a job accepted and stored, not yet started.
	Queued Status = "queued"
	// Working is a job running; Message and the counters tell how far.
	Working Status = "working"
	// InputRequired is a job waiting for the caller to answer a question
	// (Message), such as approving a research plan.
	InputRequired Status = "input_required"
	// Completed is a job done: its Result is the call's result.
	Completed Status = "completed"
	// Failed is a job that failed: its Error says why; Partial keeps what was produced.
	Failed Status = "failed"
	// Cancelled is a job stopped at the caller's request.
	Cancelled Status = "cancelled"
)

// Valid reports whether s is one of the statuses above.
func (s Status) Valid() bool {
	switch s {
	case Queued, Working, InputRequired, Completed, Failed, Cancelled:
		return true
	}
	return false
}

// Final reports whether s is a status a job never leaves.
func (s Status) Final() bool { return s == Completed || s == Failed || s == Cancelled }

// Live reports whether a job in s still runs or waits to: live jobs count
// against Limits.
func (s Status) Live() bool { return s.Valid() && !s.Final() }

// TaskStatus is s as the Tasks extension names it (see the package
// comment).
func (s Status) TaskStatus() string {
	if s == Queued {
		return string(Working)
	}
	return string(s)
}

// Job is the record of one background job.
type Job struct {
	// ID names the job to its owner: a random (version 4) UUID, 122
	// random bits, so that no one guesses another's.
	ID string `json:"id"`
	// Owner is the caller key of the caller that started it (the same as
	// session.Record.Owner: a token id, an OAuth subject, "" on stdio and
	// HTTP without authentication). Only that owner sees the job: to any
	// other, the stores answer as if it did not exist.
	Owner string `json:"owner"`
	// Tool is the name of the tool the job runs.
	Tool   string `json:"tool"`
	Status Status `json:"status"`
	// Version counts the job's stored changes: 1 once created, one more
	// on every update. Store.UpdateJob writes a job only over the version
	// it was read at, so that two processes cannot overwrite each other's
	// changes; Store.WaitJob waits for it to move.
	Version int64     `json:"version"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// TTL is how long the job is kept after its last change; Expires is
	// then, Updated+TTL. An expired job is as unknown as one never made.
	TTL     time.Duration `json:"ttl"`
	Expires time.Time     `json:"expires"`

	// Message says what the job is doing (a progress message) or, when
	// InputRequired, what it asks.
	Message string `json:"message,omitempty"`
	// Progress and Total are the job's counters, as MCP's progress
	// notifications carry them: Total 0 when unknown.
	Progress float64 `json:"progress,omitempty"`
	Total    float64 `json:"total,omitempty"`
	// Partial is the output so far (its first MaxPartialBytes), while the
	// job runs and after it fails or is cancelled; PartialDropped counts
	// the bytes of it not kept.
	Partial        string `json:"partial,omitempty"`
	PartialDropped int    `json:"partialDropped,omitempty"`
	// PartialTail says that Partial is the end of the output so far (its
	// last MaxPartialTailBytes, SetPartialTail), PartialDropped the bytes
	// before it; otherwise it is its start.
	PartialTail bool `json:"partialTail,omitempty"`

	// Result is the JSON of the *mcp.CallToolResult the synchronous call
	// would have returned (a tool error too, with isError): set when
	// Completed, and only then.
	Result json.RawMessage `json:"result,omitempty"`
	// Error says why a Failed job failed.
	Error string `json:"error,omitempty"`
	// RPCError, for a tool that fails with a JSON-RPC error rather than
	// an error result, is the JSON of the error the synchronous call
	// would have returned (its code, message and data): set only when
	// Failed, and then the job tool returns it as that call would have.
	RPCError json.RawMessage `json:"rpcError,omitempty"`

	// CancelRequested is set by the caller's cancel of a job that is
	// running: the process running it stops it and marks it Cancelled.
	CancelRequested bool `json:"cancelRequested,omitempty"`
	// Resume is the backend's handle on the work (an Interactions API
	// interaction id), opaque here, so that a process other than the one
	// that started the job can go on following it.
	Resume string `json:"resume,omitempty"`
	// Runner is the process running the job, set when it starts (see
	// runner.go): a restarted server knows its previous run's jobs by it.
	Runner *Runner `json:"runner,omitempty"`
	// ResultMeta is a JSON object of _meta entries for the job's result
	// that the process which finishes it may not know: what the call
	// that started it knew (research's files sent and left out), kept
	// for a run resumed by another process.
	ResultMeta json.RawMessage `json:"resultMeta,omitempty"`
}

// Errors of the lifecycle and the stores. The stores' own failures (Redis
// down, the disk full) wrap session.ErrUnavailable instead.
var (
	// ErrNotFound: no such job for this owner — never made, expired, or
	// another owner's.
	ErrNotFound = errors.New("no such job")
	// ErrConflict: the job changed since it was read (Store.UpdateJob).
	ErrConflict = errors.New("the job changed since it was read")
	// ErrLimit: a limit on live jobs refused a new one.
	ErrLimit = errors.New("too many jobs")
	// ErrFinal: the job has finished and cannot change.
	ErrFinal = errors.New("the job has finished")
)

// New returns a job of owner running tool, Queued at now, kept ttl after
// its last change (config.DefaultJobTTL when ttl is 0).
func New(owner, tool string, ttl time.Duration, now time.Time) (Job, error) {
	if ttl == 0 {
		ttl = config.DefaultJobTTL
	}
	j := Job{ID: session.NewUUID(), Owner: owner, Tool: tool, Status: Queued, Created: now, TTL: ttl}
	j.touch(now)
	return j, j.Check()
}

// touch records a change at now: it restarts the TTL.
func (j *Job) touch(now time.Time) {
	if now.Before(j.Updated) {
		now = j.Updated // a clock that stepped back does not shorten the job's life
	}
	j.Updated = now
	j.Expires = now.Add(j.TTL)
}

// from refuses a change of a job that has finished.
func (j *Job) from(what string, ok ...Status) error {
	if j.Status.Final() {
		return fmt.Errorf("job %s: cannot %s: %w (%s)", j.ID, what, ErrFinal, j.Status)
	}
	for _, s := range ok {
		if j.Status == s {
			return nil
		}
	}
	return fmt.Errorf("job %s: cannot %s while %s", j.ID, what, j.Status)
}

// Start marks a queued job Working: its runner has picked it up. A job
// cancelled before it started has finished (ErrFinal): its runner drops it.
func (j *Job) Start(now time.Time) error {
	if err := j.from("start", Queued); err != nil {
		return err
	}
	j.Status = Working
	j.touch(now)
	return nil
}

// Report records progress of a working job: its message (cut to
// MaxMessageBytes) and counters.
func (j *Job) Report(message string, progress, total float64, now time.Time) error {
	if err := j.from("report progress", Working); err != nil {
		return err
	}
	if progress < 0 || total < 0 {
		return fmt.Errorf("job %s: negative progress %v or total %v", j.ID, progress, total)
	}
	j.Message, _ = Cut(message, MaxMessageBytes)
	j.Progress, j.Total = progress, total
	j.touch(now)
	return nil
}

// SetPartial replaces the output so far of a job that has not finished,
// keeping its first MaxPartialBytes.
func (j *Job) SetPartial(text string, now time.Time) error {
	if err := j.from("keep partial output", Queued, Working, InputRequired); err != nil {
		return err
	}
	j.Partial, j.PartialDropped = Cut(text, MaxPartialBytes)
	j.PartialTail = false
	j.touch(now)
	return nil
}

// SetPartialTail replaces the output so far of a job that has not
// finished with the last MaxPartialTailBytes of text: the live output of
// a job still running, whose end is what a caller polling it wants.
func (j *Job) SetPartialTail(text string, now time.Time) error {
	return j.SetPartialTailAfter(text, 0, now)
}

// SetPartialTailAfter is SetPartialTail of an output so far whose first
// before bytes are not given, only what follows them (tail): a writer
// that knows its output's length need not build all of it to keep its
// end.
func (j *Job) SetPartialTailAfter(tail string, before int, now time.Time) error {
	if err := j.from("keep partial output", Queued, Working, InputRequired); err != nil {
		return err
	}
	var dropped int
	j.Partial, dropped = CutTail(tail, MaxPartialTailBytes)
	j.PartialDropped = max(before, 0) + dropped
	j.PartialTail = j.Partial != ""
	j.touch(now)
	return nil
}

// SetResume records the backend's handle on the work.
func (j *Job) SetResume(handle string, now time.Time) error {
	if err := j.from("keep a resume handle", Queued, Working, InputRequired); err != nil {
		return err
	}
	if len(handle) > MaxResumeBytes {
		return fmt.Errorf("job %s: a resume handle of %d bytes is over %d", j.ID, len(handle), MaxResumeBytes)
	}
	j.Resume = handle
	j.touch(now)
	return nil
}

// SetResultMeta keeps meta, entries of the result's _meta, for whichever
// process finishes the job (ResultMeta). Entries that do not fit
// MaxResultMetaBytes as JSON are refused, and nothing is changed.
func (j *Job) SetResultMeta(meta map[string]any, now time.Time) error {
	if err := j.from("keep the result's _meta", Queued, Working, InputRequired); err != nil {
		return err
	}
	data, err := json.Marshal(meta)
	if err != nil {
		return fmt.Errorf("job %s: the result's _meta: %w", j.ID, err)
	}
	if len(data) > MaxResultMetaBytes {
		return fmt.Errorf("job %s: the result's _meta of %d bytes is over %d", j.ID, len(data), MaxResultMetaBytes)
	}
	j.ResultMeta = data
	j.touch(now)
	return nil
}

// AskInput marks a working job InputRequired, asking question.
func (j *Job) AskInput(question string, now time.Time) error {
	if err := j.from("ask for input", Working); err != nil {
		return err
	}
	j.Status = InputRequired
	j.Message, _ = Cut(question, MaxMessageBytes)
	j.touch(now)
	return nil
}

// Resumed marks a job that was waiting for input Working again: the
// caller answered.
func (j *Job) Resumed(now time.Time) error {
	if err := j.from("resume", InputRequired); err != nil {
		return err
	}
	j.Status = Working
	j.Message = ""
	j.touch(now)
	return nil
}

// Complete finishes a running job with the call's result, kept as its
// JSON. A result whose JSON is over MaxResultBytes is refused and the job
// left as it was: its runner fails it instead.
func (j *Job) Complete(res *mcp.CallToolResult, now time.Time) error {
	if err := j.from("complete", Working, InputRequired); err != nil {
		return err
	}
	if res == nil {
		return fmt.Errorf("job %s: no result", j.ID)
	}
	data, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("job %s: the result: %w", j.ID, err)
	}
	if len(data) > MaxResultBytes {
		return fmt.Errorf("job %s: the result's %d bytes of JSON are over the %d a job keeps", j.ID, len(data), MaxResultBytes)
	}
	j.Status, j.Result = Completed, data
	j.Message, j.Partial, j.PartialDropped, j.PartialTail = "", "", 0, false
	j.touch(now)
	return nil
}

// Fail finishes a job with an error (cut to MaxErrorBytes), keeping its
// partial output.
func (j *Job) Fail(why string, now time.Time) error {
	if err := j.from("fail", Queued, Working, InputRequired); err != nil {
		return err
	}
	if why == "" {
		why = "failed"
	}
	j.Status = Failed
	j.Error, _ = Cut(why, MaxErrorBytes)
	j.touch(now)
	return nil
}

// FailRPC fails a job as Fail does, keeping rpc, the JSON of the JSON-RPC
// error the synchronous call would have returned (see Job.RPCError). A
// rpc over MaxRPCErrorBytes is refused and the job left as it was.
func (j *Job) FailRPC(why string, rpc json.RawMessage, now time.Time) error {
	if len(rpc) > MaxRPCErrorBytes || !json.Valid(rpc) {
		return fmt.Errorf("job %s: a JSON-RPC error of %d bytes is over %d or not JSON", j.ID, len(rpc), MaxRPCErrorBytes)
	}
	if err := j.Fail(why, now); err != nil {
		return err
	}
	j.RPCError = rpc
	return nil
}

// Cancelled finishes a job as cancelled, keeping its partial output.
func (j *Job) Cancelled(now time.Time) error {
	if err := j.from("cancel", Queued, Working, InputRequired); err != nil {
		return err
	}
	j.Status = Cancelled
	j.touch(now)
	return nil
}

// RequestCancel is the caller's cancel: a job not yet started, or one
// whose runner has stopped (Stale: no one would see the request), is
// Cancelled at once; a running one is marked CancelRequested for its
// runner, which stops it. A finished job is left as it is (changed is
// false), as is a running one whose cancel was already requested.
func (j *Job) RequestCancel(now time.Time) (changed bool) {
	switch {
	case j.Status.Final() || j.CancelRequested && !j.Stale(now):
		return false
	case j.Status == Queued || j.Stale(now):
		j.Status = Cancelled
	}
	j.CancelRequested = true
	j.touch(now)
	return true
}

// CallToolResult returns the result of a completed job as the synchronous
// call would have returned it.
func (j Job) CallToolResult() (*mcp.CallToolResult, error) {
	if j.Status != Completed {
		return nil, fmt.Errorf("job %s is %s, not completed", j.ID, j.Status)
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(j.Result, &res); err != nil {
		return nil, fmt.Errorf("job %s: its stored result: %w", j.ID, err)
	}
	return &res, nil
}

// Cut returns s's first max bytes (at a UTF-8 boundary) and how many
// bytes it left out.
func Cut(s string, max int) (string, int) {
	if len(s) <= max {
		return s, 0
	}
	n := max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], len(s) - n
}

// CutTail returns s's last max bytes (from a UTF-8 boundary) and how
// many bytes before them it left out.
func CutTail(s string, max int) (string, int) {
	if len(s) <= max {
		return s, 0
	}
	n := len(s) - max
	for n < len(s) && !utf8.RuneStart(s[n]) {
		n++
	}
	return s[n:], n
}

func clip(s string) string {
	if len(s) > 80 {
		s, _ = Cut(s, 80)
		return s + "…"
	}
	return s
}

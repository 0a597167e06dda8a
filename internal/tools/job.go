package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
)

// MaxJobWait bounds the job tool's wait, in seconds: under the minute
// most clients give a tool call.
const MaxJobWait = 60

// JobInput is the job tool's arguments; its tags are its input schema.
type JobInput struct {
	JobID  string  `json:"jobId" jsonschema:"The job's id, from the result of the call that started it (background: true)."`
	Wait   float64 `json:"wait,omitempty" jsonschema:"Optional: how many seconds (0 to 60, default 0) to wait for the job to finish or change status before answering."`
	Cancel bool    `json:"cancel,omitempty" jsonschema:"Optional: cancel the job. A running job stops; the answer gives its status."`
}

// extendSchema gives wait its range.
func (JobInput) extendSchema(s *jsonschema.Schema) {
	w := s.Properties["wait"]
	w.Minimum, w.Maximum = ptr(0.0), ptr(float64(MaxJobWait))
}

// AddJob adds job to s.
func AddJob(s *mcp.Server, d *Deps) { s.AddTool(jobTool(), handle(d.job)) }

func jobTool() *mcp.Tool {
	return &mcp.Tool{
		Name: "job",
		Description: "Get the status, progress and, once it is done, the result of a background job: a research call, or a call of chat, chat-reply, " +
			"thinkdeep, analyze or debug made with background: true. The result of a finished job is the one the call would have returned " +
			"(for research, its report). wait waits up to 60 seconds for it; cancel stops it.",
		InputSchema: inputTypeOf[JobInput]().sc.CloneSchemas(),
		Annotations: &mcp.ToolAnnotations{Title: "Background job", OpenWorldHint: ptr(false)},
	}
}

func (d *Deps) job(ctx context.Context, req *mcp.CallToolRequest, in JobInput) (*mcp.CallToolResult, any, error) {
	if err := jobs.CheckID(in.JobID); err != nil {
		return nil, nil, err
	}
	if in.Wait < 0 || in.Wait > MaxJobWait {
		return nil, nil, fmt.Errorf("wait must be from 0 to %d seconds, not %v", MaxJobWait, in.Wait)
	}
	if d.Jobs == nil {
		return nil, nil, errors.New("this server runs no background jobs")
	}
	owner := d.Conv.CallOf(ctx, req).Who.Token
	var j jobs.Job
	var err error
	if in.Cancel {
		j, err = d.cancelJob(ctx, owner, in.JobID)
	} else {
		var ok bool
		j, ok, err = d.Jobs.GetJob(ctx, owner, in.JobID)
		if err == nil && !ok {
			err = jobs.NotFound(in.JobID)
		}
	}
	if err != nil {
		return nil, nil, jobError(err)
	}
	if j.Orphaned(jobs.Self(), jobs.Alive) {
		// Its process, an earlier run of this server, is gone: no one
		// will end it, and there is nothing to wait for.
		if j, err = jobs.FailOrphaned(ctx, d.Jobs, owner, j.ID, jobs.Self(), jobs.Alive, time.Now()); err != nil {
			return nil, nil, jobError(err)
		}
	}
	if j, err = waitJob(ctx, d.Jobs, j, time.Duration(in.Wait*float64(time.Second)), true); err != nil {
		return nil, nil, jobError(err)
	}
	if j.Stale(time.Now()) && j.CancelRequested {
		// Its cancel was asked before its process stopped: end it so.
		if j, err = d.cancelJob(ctx, owner, j.ID); err != nil {
			return nil, nil, jobError(err)
		}
	}
	if j.Stale(time.Now()) {
		// Its process stopped: no one will end it but this, or resume it.
		if j, err = d.resumeResearch(ctx, j); err != nil {
			return nil, nil, jobError(err)
		}
	}
	if j.Stale(time.Now()) {
		if j, err = jobs.FailStale(ctx, d.Jobs, owner, j.ID, time.Now()); err != nil {
			return nil, nil, jobError(err)
		}
	}
	return jobResult(j)
}

// waitJob waits up to max for j to finish (or, with onStatus, to change
// status), and returns it as it then is; a job whose runner stopped
// (Stale) is not waited for.
func waitJob(ctx context.Context, st jobs.Store, j jobs.Job, max time.Duration, onStatus bool) (jobs.Job, error) {
	deadline := time.Now().Add(max)
	status := j.Status
	for !j.Status.Final() && (!onStatus || j.Status == status) && !j.Stale(time.Now()) {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		next, ok, err := st.WaitJob(ctx, j.Owner, j.ID, j.Version, left)
		if err != nil {
			return j, err
		}
		if !ok {
			return j, jobs.NotFound(j.ID)
		}
		j = next
	}
	return j, nil
}

// jobError is the job tool's error of a store's err.
func jobError(err error) error {
	if errors.Is(err, jobs.ErrNotFound) {
		return fmt.Errorf("%w: no job of this caller has this id (it may have expired)", err)
	}
	return toolerr.StoreError(err)
}

// jobResult is the job tool's answer about j: a finished job's result or
// error as its call would have returned it, or its status.
func jobResult(j jobs.Job) (*mcp.CallToolResult, any, error) {
	switch j.Status {
	case jobs.Completed:
		res, err := j.CallToolResult()
		return res, nil, err
	case jobs.Failed:
		if len(j.RPCError) > 0 {
			var rpc jsonrpc.Error
			if err := json.Unmarshal(j.RPCError, &rpc); err == nil {
				return nil, nil, &rpc
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Job %s (%s) is %s", j.ID, j.Tool, j.Status)
	switch {
	case j.Status == jobs.Failed:
		fmt.Fprintf(&b, ": %s", j.Error)
	case j.Status == jobs.Cancelled:
		b.WriteString(".")
	case j.CancelRequested:
		b.WriteString(", stopping at its cancel. Call job again (with wait) for its end.")
	default:
		if j.Message != "" {
			fmt.Fprintf(&b, ": %s", j.Message)
		}
		b.WriteString(". Call job again (with wait, up to 60 seconds) for its result.")
	}
	if j.Partial != "" {
		b.WriteString("\n\n" + partialHeading(j) + "\n" + j.Partial)
	}
	meta := mcp.Meta{"jobId": j.ID, "jobStatus": string(j.Status), "tool": j.Tool,
		"created": j.Created.UTC().Format(time.RFC3339Nano), "updated": j.Updated.UTC().Format(time.RFC3339Nano)}
	if j.Message != "" {
		meta["message"] = j.Message
	}
	if j.Progress > 0 {
		meta["progress"] = j.Progress
	}
	if j.Total > 0 {
		meta["total"] = j.Total
	}
	if j.CancelRequested {
		meta["cancelRequested"] = true
	}
	if j.Partial != "" {
		meta["partial"] = j.Partial
		if j.PartialDropped > 0 {
			meta["partialDropped"] = j.PartialDropped
		}
		if j.PartialTail {
			meta["partialTail"] = true
		}
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: b.String()}}, Meta: meta, IsError: j.Status == jobs.Failed}
	return res, nil, nil
}

// partialHeading introduces j's output so far, saying which part of it
// is shown when not all of it is.
func partialHeading(j jobs.Job) string {
	switch {
	case j.PartialDropped == 0:
		return "Output so far:"
	case j.PartialTail:
		return fmt.Sprintf("Output so far (its last %d bytes; the %d before them are not shown):", len(j.Partial), j.PartialDropped)
	}
	return fmt.Sprintf("Output so far (its first %d bytes; the %d after them are not shown):", len(j.Partial), j.PartialDropped)
}

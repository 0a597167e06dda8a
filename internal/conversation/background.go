package conversation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/identity"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
)

// A background turn (Request.Background) is a job: Do chooses the
// session and directory and gathers the files at once, so that what can
// fail fast fails in the call, then creates the job (its owner the
// caller's token id, "" on stdio and without tokens) and answers with a
// result naming it. The turn runs on in a goroutine bound to the server's
// lifetime, not to the call: its progress is kept in the job (at most
// once every jobReportEvery), and its end is stored there, the result the
// synchronous call would have returned, or its error. A caller's cancel
// (jobs.Cancel, through the job tool, on any replica) is seen by the
// goroutine's watch of the job, which stops the turn; the job then ends
// Cancelled. When the server stops, its running jobs end Failed, but
// for those with a resume handle (jobs.Job.Resume), whose work goes on
// without it: they are left running, for ResumeJob.
//
// A background turn has no client to ask: its request is gone. So it
// never asks the client's user to confirm an untrusted downstream tool
// (Turn.Confirm stays nil): such tools run only when the operator allows
// them (--allow-mcp-tools), and are refused otherwise, as for a client
// that cannot be asked.

// jobReportEvery bounds how often a job's progress is written.
const jobReportEvery = time.Second

// errJobCancelled is the cause of a turn stopped by its job's cancel.
var errJobCancelled = errors.New("the job was cancelled")

// errServerStopped is why a job ends when the server stops under it.
const errServerStopped = "the server running this job stopped before it finished: start it again"

// background creates the job of the turn call of c, starts it and returns
// the result that names it.
// c is the call turn runs for, which background makes the job's.
func (s *Service) background(ctx context.Context, r Request, c *Call, call backend.Turn, turn turnFunc) (*mcp.CallToolResult, error) {
	j, err := s.newJob(ctx, c.Who, toolOf(r))
	if err != nil {
		return nil, err
	}
	finish := r.Finish
	if finish == nil {
		finish = func(res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) { return res, err }
	}
	rep := &jobReporter{s: s, owner: j.Owner, id: j.ID}
	*c = Call{Who: c.Who, notify: rep.notify, token: j.ID, partial: rep.answerSoFar}
	s.goJob(ctx, j, func(ctx context.Context, _ jobs.Job) (*mcp.CallToolResult, error) {
		return finish(turn(ctx, call, nil))
	}, nil)
	return StartedJob(j), nil
}

// toolOf names the tool of r's job.
func toolOf(r Request) string {
	if r.Call != nil && r.Call.Params != nil && r.Call.Params.Name != "" {
		return r.Call.Params.Name
	}
	return "turn"
}

// JobWork is the work of a background job j: what it returns is stored
// as the job's end. ctx ends when the job is cancelled (JobCancelled
// then says so) or the server stops.
type JobWork func(ctx context.Context, j jobs.Job) (*mcp.CallToolResult, error)

// StartJob creates a job of tool for the caller of req, runs work in the
// background as background turns run (bound to the server's lifetime,
// with the job's heartbeat and cancel watch; see background) and returns
// the job as created. unstarted, when set, is called instead of work
// when the job ends before work starts (cancelled while queued).
func (s *Service) StartJob(ctx context.Context, req *mcp.CallToolRequest, tool string, work JobWork, unstarted func()) (jobs.Job, error) {
	j, err := s.CreateJob(ctx, req, tool)
	if err != nil {
		return jobs.Job{}, err
	}
	s.RunJob(ctx, j, work, unstarted)
	return j, nil
}

// CreateJob creates a job of tool for the caller of req, Queued, within
// the caller's and the server's job limits, and runs nothing: a tool
// whose work costs before it runs (research starts an interaction)
// reserves its job first, then runs it with RunJob or fails it.
func (s *Service) CreateJob(ctx context.Context, req *mcp.CallToolRequest, tool string) (jobs.Job, error) {
	return s.newJob(ctx, s.CallOf(ctx, req).Who, tool)
}

// RunJob runs work for job j, made by CreateJob, as StartJob runs it.
func (s *Service) RunJob(ctx context.Context, j jobs.Job, work JobWork, unstarted func()) {
	s.goJob(ctx, j, work, unstarted)
}

// ResumeJob runs work for job j, Working and claimed by this process
// (its process stopped: see jobs.Job.Resume), as StartJob runs it.
func (s *Service) ResumeJob(ctx context.Context, j jobs.Job, work JobWork) {
	s.goJob(ctx, j, work, nil)
}

// JobCancelled says whether the ctx of a JobWork ended because its job
// was cancelled (not because the server stopped).
func JobCancelled(ctx context.Context) bool { return errors.Is(context.Cause(ctx), errJobCancelled) }

// newJob creates a job of tool for who, its owner who's token id.
func (s *Service) newJob(ctx context.Context, who identity.Who, tool string) (jobs.Job, error) {
	if s.o.Jobs == nil {
		return jobs.Job{}, errors.New("this server runs no background jobs: call again without background")
	}
	if err := s.acc.Identified(who); err != nil {
		return jobs.Job{}, err
	}
	j, err := jobs.New(who.Token, tool, s.o.JobTTL, s.o.Now())
	if err != nil {
		return jobs.Job{}, err
	}
	if j, err = s.o.Jobs.CreateJob(ctx, j, s.o.JobLimits); err != nil {
		if errors.Is(err, jobs.ErrLimit) {
			return jobs.Job{}, err
		}
		return jobs.Job{}, toolerr.StoreError(err)
	}
	return j, nil
}

// goJob runs work for job j in a goroutine that outlives the call: only
// the server's end and the job's cancel stop it.
func (s *Service) goJob(ctx context.Context, j jobs.Job, work JobWork, unstarted func()) {
	tctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := func() bool { return false }
	if s.o.Lifetime != nil {
		stop = context.AfterFunc(s.o.Lifetime, func() { cancel(errors.New(errServerStopped)) })
	}
	go func() {
		defer stop()
		defer cancel(nil)
		s.runJob(tctx, cancel, j, work, unstarted)
	}()
	s.o.Log.Info("started a background job", "job", j.ID, "tool", j.Tool)
}

// StartedJob is the result of a call that started job j.
func StartedJob(j jobs.Job) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("Started job %s: %s runs in the background. "+
			"Call the job tool with jobId %s (and wait, up to 60 seconds a call) for its progress and, once it is done, its result.", j.ID, j.Tool, j.ID)}},
		Meta: mcp.Meta{"jobId": j.ID, "jobStatus": string(jobs.Working)},
	}
}

// runJob runs the work of job j on ctx (cancel stops it) and stores its
// end; unstarted, when set, runs when j cannot be started.
func (s *Service) runJob(ctx context.Context, cancel context.CancelCauseFunc, j jobs.Job, work JobWork, unstarted func()) {
	id := j.ID
	j, err := s.startJob(ctx, j)
	if err != nil {
		s.o.Log.Info("a background job did not start", "job", id, "err", err)
		if unstarted != nil {
			unstarted()
		}
		return
	}
	s.followJob(ctx, cancel, j, work)
}

// startJob marks job j Working, run by this process (jobs.Self), unless
// it is resumed (it was started before), and returns it as stored.
func (s *Service) startJob(ctx context.Context, j jobs.Job) (jobs.Job, error) {
	return jobs.Update(ctx, s.o.Jobs, j.Owner, j.ID, func(j *jobs.Job) (bool, error) {
		if j.Status == jobs.Working && j.Resume != "" {
			// Resumed: it was started before.
			return false, nil
		}
		me := jobs.Self()
		j.Runner = &me
		return true, j.Start(s.o.Now())
	})
}

// followJob runs the work of job j, started, on ctx (cancel stops it):
// its cancel watch and heartbeat, then the store of its end.
func (s *Service) followJob(ctx context.Context, cancel context.CancelCauseFunc, j jobs.Job, work JobWork) {
	owner, id := j.Owner, j.ID
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		s.watchJob(ctx, cancel, owner, id, j.Version)
	}()
	beat := time.NewTicker(jobs.Heartbeat)
	beaten := make(chan struct{})
	go func() {
		defer close(beaten)
		defer beat.Stop()
		s.heartbeat(ctx, beat.C, owner, id)
	}()
	res, err := work(ctx, j)
	cause := context.Cause(ctx)
	cancel(nil)
	<-watched
	<-beaten
	// The end is stored even though the turn's ctx has ended.
	sctx, done := context.WithTimeout(context.Background(), 30*time.Second)
	defer done()
	_, uerr := jobs.Update(sctx, s.o.Jobs, owner, id, func(j *jobs.Job) (bool, error) {
		now := s.o.Now()
		switch {
		case errors.Is(cause, errJobCancelled) || j.CancelRequested:
			return true, j.Cancelled(now)
		case cause != nil && j.Resume != "":
			// The server stopped under work that goes on without it (an
			// interaction): the job is left running, for whoever polls it
			// once its heartbeat is stale to resume.
			return false, nil
		case cause != nil:
			return true, j.Fail(cause.Error(), now)
		case err != nil:
			return true, failJob(j, err, now)
		}
		if cerr := j.Complete(res, now); cerr != nil {
			return true, j.Fail(cerr.Error(), now)
		}
		return true, nil
	})
	if uerr != nil {
		s.o.Log.Warn("storing the end of a background job", "job", id, "err", uerr)
		return
	}
	s.o.Log.Info("a background job ended", "job", id, "err", err)
}

// heartbeat records, at every tick until ctx ends, that the job is
// still running (see jobs.Heartbeat), so that a job whose process stopped
// is known as such (jobs.Job.Stale).
func (s *Service) heartbeat(ctx context.Context, tick <-chan time.Time, owner, id string) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
		_, err := jobs.Update(ctx, s.o.Jobs, owner, id, func(j *jobs.Job) (bool, error) {
			if j.Status != jobs.Working {
				return false, nil
			}
			return true, j.Report(j.Message, j.Progress, j.Total, s.o.Now())
		})
		if err != nil && ctx.Err() == nil {
			s.o.Log.Warn("recording a background job's heartbeat", "job", id, "err", err)
		}
	}
}

// failJob fails j with err, keeping a JSON-RPC error as one.
func failJob(j *jobs.Job, err error, now time.Time) error {
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		data, merr := json.Marshal(rpc)
		if merr == nil && len(data) > jobs.MaxRPCErrorBytes {
			data, merr = json.Marshal(&jsonrpc.Error{Code: rpc.Code, Message: rpc.Message})
		}
		if merr == nil && j.FailRPC(rpc.Message, data, now) == nil {
			return nil
		}
	}
	return j.Fail(err.Error(), now)
}

// watchJob waits for changes of owner's job id, from version on, and
// cancels its turn when its cancel is requested or it is gone, until ctx
// ends.
func (s *Service) watchJob(ctx context.Context, cancel context.CancelCauseFunc, owner, id string, version int64) {
	for ctx.Err() == nil {
		j, ok, err := s.o.Jobs.WaitJob(ctx, owner, id, version, jobs.MaxWait)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			// The store failed: ask again a little later.
			t := time.NewTimer(jobs.PollEvery)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
			continue
		case !ok || j.CancelRequested || j.Status.Final():
			cancel(errJobCancelled)
			return
		}
		version = j.Version
	}
}

// jobReporter keeps a background turn's progress in its job: it is the
// turn's Call's progress notifier, which the turn's progress reporter
// calls at every change and every progress interval.
type jobReporter struct {
	s         *Service
	owner, id string
	mu        sync.Mutex
	last      time.Time
	partial   partialText
}

func (r *jobReporter) notify(ctx context.Context, p *mcp.ProgressNotificationParams) error {
	r.mu.Lock()
	now := time.Now()
	if !r.last.IsZero() && now.Sub(r.last) < jobReportEvery {
		r.mu.Unlock()
		return nil
	}
	r.last = now
	r.mu.Unlock()
	partial := r.partial.take()
	_, err := jobs.Update(ctx, r.s.o.Jobs, r.owner, r.id, func(j *jobs.Job) (bool, error) {
		if j.Status != jobs.Working {
			return false, nil
		}
		if err := partial.put(j, r.s.o.Now()); err != nil {
			return false, err
		}
		return true, j.Report(p.Message, p.Progress, p.Total, r.s.o.Now())
	})
	if err == nil {
		r.partial.written(partial)
	}
	return err
}

package tools

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/api/interact"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
)

// researchReportEvery bounds how often a research job's progress (its
// latest thought summary) is written to the job.
const researchReportEvery = time.Second

// MaxResearchTime is how long after its job was started a research
// interaction is given up and cancelled: Google documents research of
// up to an hour, and an API that keeps answering that the interaction
// runs must not keep a poller going for ever.
const MaxResearchTime = 3 * time.Hour

// errResearchTooLong is the cause of a research run past its limit.
var errResearchTooLong = errors.New("research took too long")

// researchRun follows interaction id for its research job.
type researchRun struct {
	jobs jobs.Store
	rs   Researcher
	id   string
	// every is the time between polls (interact's default when zero);
	// limit how long after the job's start the run is given up
	// (MaxResearchTime when zero).
	every, limit time.Duration
	// files are the files the research was started with, said in the
	// report's _meta; nil for none, and in a run resumed after a restart,
	// whose report takes them from the job's record (ResultMeta).
	files *filectx.Files
	// page pages a report too long for one result for chat-page, its
	// pages owner's (conversation.Service.PageText); nil pages nothing.
	page func(ctx context.Context, owner, text string) (string, mcp.Meta, bool)

	mu   sync.Mutex
	last time.Time
	// pending is the latest result not written for the rate limit; a
	// timer (flushing, counted by flushes) writes it when the limit lets.
	pending  *interact.Result
	flushing *time.Timer
	flushes  sync.WaitGroup
}

// run is the job's work: it records the interaction as the job's resume
// handle, polls it to its end, writing thought summaries as progress,
// and returns the report. A cancelled job cancels the interaction; a
// server that stops leaves it running.
func (r *researchRun) run(ctx context.Context, j jobs.Job) (*mcp.CallToolResult, error) {
	if _, err := jobs.Update(ctx, r.jobs, j.Owner, j.ID, func(j *jobs.Job) (bool, error) {
		if err := j.SetResume(r.id, time.Now()); err != nil {
			return false, err
		}
		// The files are kept for a run resumed elsewhere, which cannot
		// know them; notes too long to keep are only in the answer that
		// started the job.
		if meta := filesMeta(r.files); meta != nil {
			_ = j.SetResultMeta(meta, time.Now())
		}
		return true, nil
	}); err != nil {
		return nil, err
	}
	limit := r.limit
	if limit <= 0 {
		limit = MaxResearchTime
	}
	// From the job's start, not this run's: a run resumed after a restart
	// has no new allowance.
	ctx, stop := context.WithDeadlineCause(ctx, j.Created.Add(limit), errResearchTooLong)
	defer stop()
	res, err := r.rs.Wait(ctx, r.id, interact.WaitOptions{Interval: r.every, Progress: func(p *interact.Result) { r.progress(ctx, j, p) }})
	r.endFlush(ctx, j)
	if ctx.Err() != nil {
		if errors.Is(context.Cause(ctx), errResearchTooLong) {
			r.cancel()
			r.partial(j, res)
			return nil, fmt.Errorf("research: the interaction was still running %s after the job started, and was cancelled; ask a narrower question", limit)
		}
		if conversation.JobCancelled(ctx) {
			r.cancel()
		}
		return nil, context.Cause(ctx)
	}
	if err != nil {
		r.partial(j, res)
		return nil, fmt.Errorf("research: %w", err)
	}
	if err := res.Err(); err != nil {
		r.partial(j, res)
		return nil, fmt.Errorf("research: %w", err)
	}
	out := researchResult(res)
	if r.page != nil {
		// A report longer than one result is paged as chat's answers are.
		if first, meta, ok := r.page(ctx, j.Owner, out.Content[0].(*mcp.TextContent).Text); ok {
			out.Content[0] = &mcp.TextContent{Text: first}
			maps.Copy(out.Meta, meta)
		}
	}
	if r.files != nil {
		addFilesMeta(out, r.files)
	} else {
		addStoredMeta(out, j.ResultMeta)
	}
	return out, nil
}

// cancel cancels the interaction, on a context of its own: the job's
// has ended.
func (r *researchRun) cancel() {
	ctx, done := context.WithTimeout(context.Background(), 30*time.Second)
	defer done()
	_, _ = r.rs.Cancel(ctx, r.id)
}

// progress writes p's latest thought summary as the job's progress, and
// what the interaction has produced so far (researchSoFar) as its
// output so far, at most once every researchReportEvery but for the
// last.
func (r *researchRun) progress(ctx context.Context, j jobs.Job, p *interact.Result) {
	if len(p.Thoughts) == 0 && p.Text == "" {
		return
	}
	r.mu.Lock()
	now := time.Now()
	if !p.Status.Done() && !r.last.IsZero() && now.Sub(r.last) < researchReportEvery {
		// Written once the limit lets, unless a newer result comes
		// first: the API may report no change for minutes after.
		r.pending = p
		if r.flushing == nil {
			r.flushes.Add(1)
			r.flushing = time.AfterFunc(r.last.Add(researchReportEvery).Sub(now), func() {
				defer r.flushes.Done()
				r.flush(ctx, j)
			})
		}
		r.mu.Unlock()
		return
	}
	r.last, r.pending = now, nil
	r.mu.Unlock()
	r.write(ctx, j, p)
}

// flush writes the pending result, if any.
func (r *researchRun) flush(ctx context.Context, j jobs.Job) {
	r.mu.Lock()
	p := r.pending
	r.pending, r.flushing, r.last = nil, nil, time.Now()
	r.mu.Unlock()
	if p != nil && ctx.Err() == nil {
		r.write(ctx, j, p)
	}
}

// endFlush ends the flushes once the poll has ended: it stops a pending
// flush, waits for one running to end and writes what the rate limit
// held back, so that no thought summary is lost from the job's progress
// and output so far when the poll ends right after it (an error, a
// cancel, the time limit). The write outlives the job's context, briefly.
func (r *researchRun) endFlush(ctx context.Context, j jobs.Job) {
	r.mu.Lock()
	if r.flushing != nil && r.flushing.Stop() {
		r.flushing = nil
		r.flushes.Done()
	}
	p := r.pending
	r.pending = nil
	r.mu.Unlock()
	r.flushes.Wait()
	if p != nil {
		wctx, done := context.WithTimeout(context.WithoutCancel(ctx), endFlushTimeout)
		defer done()
		r.write(wctx, j, p)
	}
}

// endFlushTimeout bounds endFlush's write.
const endFlushTimeout = 5 * time.Second

// write writes p's latest thought summary and output so far into the
// job.
func (r *researchRun) write(ctx context.Context, j jobs.Job, p *interact.Result) {
	tail, before := researchSoFar(p, jobs.MaxPartialTailBytes)
	_, _ = jobs.Update(ctx, r.jobs, j.Owner, j.ID, func(j *jobs.Job) (bool, error) {
		if j.Status != jobs.Working {
			return false, nil
		}
		if err := j.SetPartialTailAfter(tail, before, time.Now()); err != nil {
			return false, err
		}
		if len(p.Thoughts) == 0 {
			return true, nil
		}
		return true, j.Report(p.Thoughts[len(p.Thoughts)-1], float64(len(p.Thoughts)), 0, time.Now())
	})
}

// researchSoFar is a running research's output so far, as the job tool
// shows it: the agent's thought summaries as the interaction reports them
// (the latest interact.MaxThoughts), oldest first, then the text of the
// report (or plan) as far as it has been written. The job keeps its end:
// only the last max bytes or so are built (tail, from a rune's start),
// before counts those before them.
func researchSoFar(p *interact.Result, max int) (tail string, before int) {
	var pieces []string
	if len(p.Thoughts) > 0 {
		pieces = append(pieces, "Thought summaries:")
		for _, t := range p.Thoughts {
			pieces = append(pieces, "\n\n", t)
		}
	}
	if p.Text != "" {
		if len(pieces) > 0 {
			pieces = append(pieces, "\n\n")
		}
		pieces = append(pieces, "The report so far:\n\n", p.Text)
	}
	// Only the pieces that hold the last max bytes are written, the
	// first of them from the byte that leaves max to go.
	first, from, total, cut := 0, 0, 0, false
	for i := len(pieces) - 1; i >= 0; i-- {
		if !cut && total+len(pieces[i]) > max {
			first, from, cut = i, len(pieces[i])-(max-total), true
		}
		total += len(pieces[i])
	}
	var b strings.Builder
	b.Grow(min(total, max))
	for i := first; i < len(pieces); i++ {
		if i == first {
			b.WriteString(pieces[i][from:])
			continue
		}
		b.WriteString(pieces[i])
	}
	tail = b.String()
	// From a rune's start: jobs.CutTail cuts no further when it fits.
	for n := 0; n < len(tail) && n < utf8.UTFMax; n++ {
		if utf8.RuneStart(tail[n]) {
			return tail[n:], total - len(tail) + n
		}
	}
	return tail, total - len(tail)
}

// partial keeps what the interaction produced before it stopped as the
// job's output so far.
func (r *researchRun) partial(j jobs.Job, p *interact.Result) {
	if p == nil || p.Text == "" {
		return
	}
	ctx, done := context.WithTimeout(context.Background(), 30*time.Second)
	defer done()
	_, _ = jobs.Update(ctx, r.jobs, j.Owner, j.ID, func(j *jobs.Job) (bool, error) {
		if j.Status.Final() {
			return false, nil
		}
		return true, j.SetPartial(p.Text, time.Now())
	})
}

// researchCitation is a citation as _meta.citations lists it.
type researchCitation struct {
	Title string `json:"title,omitempty"`
	URL   string `json:"url"`
	Start *int   `json:"start,omitempty"`
	End   *int   `json:"end,omitempty"`
}

// researchResult is the result of a finished interaction: the report (or
// the plan) and its sources as a numbered list, each source also a
// resource link, and _meta: the interaction's id, the citations, usage.
func researchResult(p *interact.Result) *mcp.CallToolResult {
	var b strings.Builder
	b.WriteString(p.Text)
	cites := make([]researchCitation, 0, len(p.Citations))
	var links []mcp.Content
	for i, c := range p.Citations {
		rc := researchCitation{Title: c.Title, URL: c.URL}
		if c.Start >= 0 {
			rc.Start, rc.End = ptr(c.Start), ptr(c.End)
		}
		cites = append(cites, rc)
		if i == 0 {
			b.WriteString("\n\nSources:")
		}
		name := c.Title
		if name == "" {
			name = c.URL
		}
		fmt.Fprintf(&b, "\n%d. %s: %s", i+1, name, c.URL)
		if c.URL != "" {
			links = append(links, &mcp.ResourceLink{URI: c.URL, Name: name, Title: c.Title})
		}
	}
	if b.Len() == 0 {
		b.WriteString("[gemini-mcp-server: the research agent answered with no text]")
	}
	meta := mcp.Meta{"interactionId": p.ID, "citations": cites}
	if p.Plan {
		meta["plan"] = true
	}
	if p.Agent != "" {
		meta["agent"] = p.Agent
	}
	if p.Usage != (interact.Usage{}) {
		meta["usage"] = map[string]int{"input": p.Usage.Input, "output": p.Usage.Output, "thought": p.Usage.Thought,
			"toolUse": p.Usage.ToolUse, "total": p.Usage.Total}
	}
	if p.Truncated {
		meta["truncated"] = true
	}
	content := append([]mcp.Content{&mcp.TextContent{Text: b.String()}}, links...)
	return &mcp.CallToolResult{Content: content, Meta: meta}
}

// resumeResearch resumes research job j, stale (the process polling its
// interaction stopped), in this process: it claims the job with a
// versioned update, so that of the replicas that see it stale one does,
// and polls the same interaction. It returns j as it then is, still
// stale when it cannot be resumed (not research, no interaction, no
// Interactions API here).
func (d *Deps) resumeResearch(ctx context.Context, j jobs.Job) (jobs.Job, error) {
	if j.Tool != "research" || j.Resume == "" || d.Research == nil {
		return j, nil
	}
	rs, err := d.Research()
	if err != nil {
		return j, nil
	}
	claimed := false
	j, err = jobs.Update(ctx, d.Jobs, j.Owner, j.ID, func(j *jobs.Job) (bool, error) {
		claimed = false
		if j.Status != jobs.Working || j.Resume == "" || !j.Stale(time.Now()) || j.CancelRequested {
			return false, nil
		}
		claimed = true
		return true, j.Report("resumed after its server stopped: polling the interaction again", j.Progress, j.Total, time.Now())
	})
	if err != nil || !claimed {
		return j, err
	}
	r := &researchRun{jobs: d.Jobs, rs: rs, id: j.Resume, every: d.ResearchPoll, limit: d.ResearchLimit, page: d.Conv.PageText}
	d.Conv.ResumeJob(ctx, j, r.run)
	return j, nil
}

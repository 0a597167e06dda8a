package tools

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/api/interact"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// researchDeps are the tools over HTTP (a caller's token owns its jobs)
// with research reaching the fake API's Interactions API, polled every
// millisecond.
func researchDeps(t *testing.T) (*Deps, *fakeapi.Server) {
	t.Helper()
	fake := fakeapi.New()
	t.Cleanup(fake.Close)
	st := memstore.New(session.Options{})
	t.Cleanup(func() { st.Close() })
	life, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	stub, _ := newStubDeps(t)
	d := stub.with(func(o *conversation.Options) {
		o.Remote, o.Store, o.Jobs, o.Lifetime = true, st, jobs.Of(st), life
	})
	d.Jobs = jobs.Of(st)
	d.ResearchPoll = time.Millisecond
	d.Research = func() (Researcher, error) {
		return interact.New(interact.Config{APIKey: "test-key", BaseURL: fake.URL(), HTTPClient: &http.Client{}})
	}
	return d, fake
}

// startResearch calls research as token and returns its answer's job id.
func startResearch(t *testing.T, d *Deps, token string, in ResearchInput) string {
	t.Helper()
	res, _, err := d.research(as(token), request(t, "research", nil), in)
	if err != nil {
		t.Fatalf("research %q: %v", in.Query, err)
	}
	id, _ := res.Meta["jobId"].(string)
	if id == "" || res.Meta["interactionId"] == nil {
		t.Fatalf("research %q answered %v, want a jobId and an interactionId", in.Query, res.Meta)
	}
	return id
}

// jobEnd waits, with the job tool, for job id of token to end.
func jobEnd(t *testing.T, d *Deps, token, id string) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx := geminitest.Context(t)
	for ctx.Err() == nil {
		res, _, err := d.job(as(token), request(t, "job", nil), JobInput{JobID: id, Wait: MaxJobWait})
		if err != nil || res.Meta["jobStatus"] == nil || jobs.Status(res.Meta["jobStatus"].(string)).Final() {
			return res, err
		}
	}
	t.Fatalf("job %s did not end", id)
	return nil, nil
}

// TestResearchReport: research answers at once with a job, whose result,
// read with job, is the report with its citations as a numbered list and
// resource links, and _meta naming the interaction and its citations;
// the job keeps the interaction as its resume handle. Another token's
// job is not found.
func TestResearchReport(t *testing.T) {
	t.Parallel()
	d, _ := researchDeps(t)
	id := startResearch(t, d, "tok", ResearchInput{Query: "the history of tea [[steps:3]]"})
	res, err := jobEnd(t, d, "tok", id)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("the research failed: %s", textOf(res))
	}
	q := "the history of tea [[steps:3]]"
	text := textOf(res)
	if !strings.HasPrefix(text, fakeapi.ReportText(q)) || !strings.Contains(text, "Sources:\n1. Fake source one: https://example.com/one\n2. Fake source two: https://example.com/two") {
		t.Errorf("the report:\n%s", text)
	}
	var links []string
	for _, c := range res.Content[1:] {
		if l, ok := c.(*mcp.ResourceLink); ok {
			links = append(links, l.URI+" "+l.Name)
		}
	}
	if !slices.Equal(links, []string{"https://example.com/one Fake source one", "https://example.com/two Fake source two"}) {
		t.Errorf("the resource links: %v", links)
	}
	j, _, _ := d.Jobs.GetJob(context.Background(), "tok", id)
	if j.Resume == "" || res.Meta["interactionId"] != j.Resume {
		t.Errorf("the job's resume handle %q, the result's interactionId %v", j.Resume, res.Meta["interactionId"])
	}
	if cites, ok := res.Meta["citations"].([]any); !ok || len(cites) != 2 {
		t.Errorf("_meta.citations: %#v", res.Meta["citations"])
	}
	if _, err := jobEnd(t, d, "other", id); err == nil || !strings.Contains(err.Error(), "no job of this caller") {
		t.Errorf("another token's job: %v", err)
	}
}

// TestResearchFailed: an interaction that fails fails its job with why.
func TestResearchFailed(t *testing.T) {
	t.Parallel()
	d, _ := researchDeps(t)
	id := startResearch(t, d, "tok", ResearchInput{Query: "doomed [[final:failed]]"})
	res, err := jobEnd(t, d, "tok", id)
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || res.Meta["jobStatus"] != string(jobs.Failed) || !strings.Contains(textOf(res), fakeapi.InteractionFailedMessage) {
		t.Errorf("the failed research: %v %s", res.Meta["jobStatus"], textOf(res))
	}
}

// TestResearchCancel: the agent's thought summaries are the job's
// progress; cancelling the job cancels the interaction.
func TestResearchCancel(t *testing.T) {
	t.Parallel()
	d, fake := researchDeps(t)
	id := startResearch(t, d, "tok", ResearchInput{Query: "forever [[hold]]"})
	ctx := geminitest.Context(t)
	for j, _, _ := d.Jobs.GetJob(ctx, "tok", id); !strings.HasPrefix(j.Message, "Thinking, step"); {
		var err error
		if j, _, err = d.Jobs.WaitJob(ctx, "tok", id, j.Version, time.Minute); err != nil {
			t.Fatalf("no thought summary as the job's progress: %v (message %q)", err, j.Message)
		}
	}
	if _, _, err := d.job(as("tok"), request(t, "job", nil), JobInput{JobID: id, Cancel: true}); err != nil {
		t.Fatal(err)
	}
	res, err := jobEnd(t, d, "tok", id)
	if err != nil || res.Meta["jobStatus"] != string(jobs.Cancelled) {
		t.Fatalf("the cancelled job: %v %v", res, err)
	}
	err = fake.WaitFor(geminitest.Context(t), func(reqs []fakeapi.Request) bool {
		return slices.ContainsFunc(reqs, func(r fakeapi.Request) bool { return r.Method == fakeapi.MethodInteractionCancel })
	})
	if err != nil {
		t.Errorf("the interaction was not cancelled: %v", err)
	}
}

// TestResearchGivenUp: an interaction the API keeps reporting as running
// is given up at the limit counted from the job's start: the job fails
// saying so, and the interaction is cancelled.
func TestResearchGivenUp(t *testing.T) {
	t.Parallel()
	d, fake := researchDeps(t)
	d.ResearchLimit = 200 * time.Millisecond
	id := startResearch(t, d, "tok", ResearchInput{Query: "forever [[hold]]"})
	res, err := jobEnd(t, d, "tok", id)
	if err != nil || res.Meta["jobStatus"] != string(jobs.Failed) || !strings.Contains(textOf(res), "still running 200ms after the job started") {
		t.Fatalf("a research past its limit: %v %v", res, err)
	}
	err = fake.WaitFor(geminitest.Context(t), func(reqs []fakeapi.Request) bool {
		return slices.ContainsFunc(reqs, func(r fakeapi.Request) bool { return r.Method == fakeapi.MethodInteractionCancel })
	})
	if err != nil {
		t.Errorf("the interaction was not cancelled: %v", err)
	}
}

// TestResearchPlan: with plan the job ends with the plan; a second call
// continuing from that job runs the research; another caller cannot
// continue it, by job id or by interaction id.
func TestResearchPlan(t *testing.T) {
	t.Parallel()
	d, _ := researchDeps(t)
	q := "plan the tea study"
	id := startResearch(t, d, "tok", ResearchInput{Query: q, Plan: true})
	res, err := jobEnd(t, d, "tok", id)
	if err != nil || res.IsError {
		t.Fatalf("the plan: %v %v", res, err)
	}
	if !strings.HasPrefix(textOf(res), fakeapi.PlanText(q)) || res.Meta["plan"] != true {
		t.Errorf("the plan: %s %v", textOf(res), res.Meta)
	}
	interaction := res.Meta["interactionId"].(string)
	for _, ref := range []string{id, interaction} {
		_, _, err := d.research(as("other"), request(t, "research", nil), ResearchInput{Query: "go ahead", ContinueFrom: ref})
		if err == nil || !strings.Contains(err.Error(), "no research job of this caller") {
			t.Errorf("another caller continuing %s: %v", ref, err)
		}
	}
	next := startResearch(t, d, "tok", ResearchInput{Query: "go ahead", ContinueFrom: id})
	res, err = jobEnd(t, d, "tok", next)
	if err != nil || res.IsError || res.Meta["plan"] == true || !strings.Contains(textOf(res), "Sources:") {
		t.Fatalf("the approved research: %v %v", res, err)
	}
}

// TestResearchRefused: without the API backend research is refused,
// naming --backend api; a bad wait is refused before anything starts.
func TestResearchRefused(t *testing.T) {
	t.Parallel()
	d, fake := researchDeps(t)
	if _, _, err := d.research(as("tok"), request(t, "research", nil), ResearchInput{Query: "q", Wait: 61}); err == nil || !strings.Contains(err.Error(), "wait must be") {
		t.Errorf("wait 61: %v", err)
	}
	if _, _, err := d.research(as("tok"), request(t, "research", nil), ResearchInput{Query: " "}); err == nil || !strings.Contains(err.Error(), "query is empty") {
		t.Errorf("an empty query: %v", err)
	}
	if _, _, err := d.research(as("tok"), request(t, "research", nil), ResearchInput{Query: "q", ContinueFrom: "nope"}); err == nil || !strings.Contains(err.Error(), "no research job of this caller") {
		t.Errorf("continue_from nothing: %v", err)
	}
	if len(fake.Interactions()) != 0 {
		t.Errorf("a refused call started interactions %v", fake.Interactions())
	}
	d.Research = nil
	if _, _, err := d.research(as("tok"), request(t, "research", nil), ResearchInput{Query: "q"}); err == nil || !strings.Contains(err.Error(), "--backend api") {
		t.Errorf("on a CLI backend: %v", err)
	}
}

// TestResearchWait: wait answers with the report itself when it comes in
// time.
func TestResearchWait(t *testing.T) {
	t.Parallel()
	d, _ := researchDeps(t)
	res, _, err := d.research(as("tok"), request(t, "research", nil), ResearchInput{Query: "quick", Wait: MaxJobWait})
	if err != nil || res.IsError || !strings.HasPrefix(textOf(res), fakeapi.ReportText("quick")) {
		t.Fatalf("research with wait: %v %v", res, err)
	}
}

// countingResearcher counts the polls of interactions (Wait calls) begun.
type countingResearcher struct {
	Researcher
	waits atomic.Int32
}

func (c *countingResearcher) Wait(ctx context.Context, id string, o interact.WaitOptions) (*interact.Result, error) {
	c.waits.Add(1)
	return c.Researcher.Wait(ctx, id, o)
}

// TestResearchResumed: a research job whose process stopped (its
// heartbeat stale) is resumed by the job tool, once however many see it
// stale, and polled to its report.
func TestResearchResumed(t *testing.T) {
	t.Parallel()
	d, _ := researchDeps(t)
	rs, err := d.Research()
	if err != nil {
		t.Fatal(err)
	}
	counting := &countingResearcher{Researcher: rs}
	d.Research = func() (Researcher, error) { return counting, nil }
	ctx := geminitest.Context(t)
	q := "left behind [[steps:2]]"
	first, err := rs.StartAgent(ctx, interact.AgentRequest{Input: q})
	if err != nil {
		t.Fatal(err)
	}
	j := staleResearchJob(t, d, first.ID, func(j *jobs.Job, past time.Time) error {
		// What the first run kept of the files it was started with.
		return j.SetResultMeta(map[string]any{"filesProcessed": []filectx.FileNote{{Path: "notes.txt"}},
			"filesSkipped": []filectx.FileNote{{Path: ".env", Reason: "a credential file"}}}, past)
	})
	// Two replicas see it stale at once: one resumes it.
	for range 2 {
		if _, err := d.resumeResearch(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	res, err := jobEnd(t, d, "tok", j.ID)
	if err != nil || res.IsError || !strings.HasPrefix(textOf(res), fakeapi.ReportText(q)) {
		t.Fatalf("the resumed job: %v %v", res, err)
	}
	if n := counting.waits.Load(); n != 1 {
		t.Errorf("the interaction was polled by %d runners, want 1", n)
	}
	meta, _ := json.Marshal(map[string]any{"processed": res.Meta["filesProcessed"], "skipped": res.Meta["filesSkipped"]})
	if want := `{"processed":[{"path":"notes.txt"}],"skipped":[{"path":".env","reason":"a credential file"}]}`; string(meta) != want {
		t.Errorf("the resumed job's report says of its files %s, want %s", meta, want)
	}
}

// TestResearchPartial: while research runs, the job tool shows the
// agent's thought summaries so far as the job's output, in its text and
// _meta.partial, the latest of them written even when it came within the
// rate limit of the one before and the API reports no change after.
func TestResearchPartial(t *testing.T) {
	t.Parallel()
	d, _ := researchDeps(t)
	id := startResearch(t, d, "tok", ResearchInput{Query: "slowly [[hold]] [[steps:3]]"})
	want := "Thought summaries:\n\n" + fakeapi.ThoughtText(1) + "\n\n" + fakeapi.ThoughtText(2) + "\n\n" + fakeapi.ThoughtText(3)
	ctx := geminitest.Context(t)
	for j, _, _ := d.Jobs.GetJob(ctx, "tok", id); j.Partial != want; {
		var err error
		if j, _, err = d.Jobs.WaitJob(ctx, "tok", id, j.Version, time.Minute); err != nil {
			t.Fatalf("the job's output so far is %q, want %q: %v", j.Partial, want, err)
		}
	}
	res, _, err := d.job(as("tok"), request(t, "job", nil), JobInput{JobID: id})
	if err != nil || res.Meta["partial"] != want || !strings.HasSuffix(textOf(res), "\n\nOutput so far:\n"+want) {
		t.Errorf("the job tool: %v, %q", err, textOf(res))
	}
	if _, _, err := d.job(as("tok"), request(t, "job", nil), JobInput{JobID: id, Cancel: true}); err != nil {
		t.Fatal(err)
	}
	if res, err := jobEnd(t, d, "tok", id); err != nil || res.Meta["jobStatus"] != string(jobs.Cancelled) {
		t.Fatalf("the cancelled job: %v %v", res, err)
	}
}

// TestResearchAtJobLimit: a caller already at its job limit is refused
// before any interaction is created (the API sees no create); an
// interaction the API refuses fails the call and the job reserved for it.
func TestResearchAtJobLimit(t *testing.T) {
	t.Parallel()
	d, fake := researchDeps(t)
	ctx := as("tok")
	owner := d.Conv.CallOf(ctx, request(t, "research", nil)).Who.Token
	for range config.DefaultMaxJobsPerOwner {
		j, err := jobs.New(owner, "chat", 0, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Jobs.CreateJob(ctx, j, jobs.Limits{}); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		if _, _, err := d.research(ctx, request(t, "research", nil), ResearchInput{Query: "q"}); !errors.Is(err, jobs.ErrLimit) {
			t.Fatalf("research at the job limit: %v, want %v", err, jobs.ErrLimit)
		}
	}
	for _, r := range fake.Requests() {
		if r.Method == fakeapi.MethodInteractionCreate {
			t.Fatalf("a call refused at the job limit created interaction %s", r.Interaction)
		}
	}

	_, _, err := d.research(as("other"), request(t, "research", nil), ResearchInput{Query: "refused [[status:403]]"})
	if err == nil {
		t.Fatal("an interaction the API refused: no error")
	}
	list, lerr := d.Jobs.ListJobs(ctx, d.Conv.CallOf(as("other"), request(t, "research", nil)).Who.Token, 10)
	if lerr != nil || len(list) != 1 || list[0].Status != jobs.Failed || !strings.Contains(list[0].Error, "research:") {
		t.Fatalf("the job of a refused interaction: %+v %v (the call said %v)", list, lerr, err)
	}
}

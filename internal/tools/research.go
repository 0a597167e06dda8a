package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/api/interact"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/validate"
)

// The research tool runs a Deep Research agent (the Gemini API's
// Interactions API, package interact) as a background job: the call
// answers at once with the job's id (or waits up to wait seconds for its
// end), and the job tool reports its progress (the agent's thought
// summaries) and, once it is done, the report with its citations. The
// job runs as background turns do (conversation.Service.StartJob): its
// owner is the caller, its heartbeat and cancel watch the same. The
// interaction's id is the job's resume handle (jobs.Job.Resume), which
// a follow-up call names through continue_from: the approval of a
// research plan, or changes to it.

// ResearchInput is research's arguments; its tags are its input schema.
type ResearchInput struct {
	Query             string   `json:"query" jsonschema:"What to research. After a plan (continue_from), the approval ('go ahead') or the changes to make to the plan."`
	Agent             string   `json:"agent,omitempty" jsonschema:"Optional: the Deep Research agent. Omit for the default agent."`
	Plan              bool     `json:"plan,omitempty" jsonschema:"Optional: plan first. The job ends with the research plan as its result (_meta.plan: true); call research again with continue_from set to that job's id to approve it or ask for changes."`
	ContinueFrom      string   `json:"continue_from,omitempty" jsonschema:"Optional: the id of an earlier research job of yours (or its _meta.interactionId) to continue: the answer to its plan."`
	ThinkingSummaries *bool    `json:"thinking_summaries,omitempty" jsonschema:"Optional: report the agent's thought summaries as the job's progress (default true)."`
	Wait              float64  `json:"wait,omitempty" jsonschema:"Optional: how many seconds (0 to 60, default 0) to wait for the result before answering with the job."`
	Files             []string `json:"files,omitempty" jsonschema:"Optional: files or directories inside the project root for the agent to read with the query: text files with line numbers (as chat sends them) and PDFs. Credential files are never sent; what was sent and left out is in _meta.filesProcessed and filesSkipped."`
	URLs              []string `json:"urls,omitempty" jsonschema:"Optional: up to 20 public http(s) URLs the agent is asked to read for the research (it fetches them itself; this server never does). URLs of this machine or a private network are refused."`
}

// extendSchema gives wait its range and thinking_summaries its type and
// default.
func (ResearchInput) extendSchema(s *jsonschema.Schema) {
	w := s.Properties["wait"]
	w.Minimum, w.Maximum = ptr(0.0), ptr(float64(MaxJobWait))
	ts := s.Properties["thinking_summaries"]
	ts.Type, ts.Types = "boolean", nil
	ts.Default = []byte("true")
}

// Researcher is what the research tool needs of the Interactions API
// (an *interact.Client).
type Researcher interface {
	StartAgent(ctx context.Context, r interact.AgentRequest) (*interact.Result, error)
	Wait(ctx context.Context, id string, o interact.WaitOptions) (*interact.Result, error)
	Cancel(ctx context.Context, id string) (*interact.Result, error)
}

// errNoResearch is research's error on a server whose backend has no
// Interactions API.
var errNoResearch = errors.New("research runs Gemini's Deep Research agent, which only the Gemini API backend reaches: " +
	"the server's operator can run it with --backend api (and a Gemini API key)")

// AddResearch adds research to s.
func AddResearch(s *mcp.Server, d *Deps) { s.AddTool(researchTool(), handle(d.research)) }

func researchTool() *mcp.Tool {
	return &mcp.Tool{
		Name: "research",
		Description: "Research a question in depth with Google Gemini's Deep Research agent (Gemini API backend only): it searches the web and " +
			"writes a cited report, which takes minutes. It always runs as a background job: the answer names the job (_meta.jobId); " +
			"call the job tool with it (and wait) for progress and the report, its citations as a numbered list and resource links. " +
			"With plan: true the job ends with a research plan instead; approve or change it with a second call, continue_from set to that job's id.",
		InputSchema: inputTypeOf[ResearchInput]().sc.CloneSchemas(),
		Annotations: &mcp.ToolAnnotations{Title: "Deep Research with Gemini", OpenWorldHint: ptr(true)},
	}
}

func (d *Deps) research(ctx context.Context, req *mcp.CallToolRequest, in ResearchInput) (*mcp.CallToolResult, any, error) {
	if strings.TrimSpace(in.Query) == "" {
		return nil, nil, errors.New("query is empty: say what to research (or, with continue_from, approve or change the plan)")
	}
	if err := validate.Text("query", in.Query, d.MaxPromptBytes); err != nil {
		return nil, nil, err
	}
	if in.Wait < 0 || in.Wait > MaxJobWait {
		return nil, nil, fmt.Errorf("wait must be from 0 to %d seconds, not %v", MaxJobWait, in.Wait)
	}
	if d.Research == nil {
		return nil, nil, errNoResearch
	}
	if d.Jobs == nil {
		return nil, nil, errors.New("this server runs no background jobs, and research runs only as one")
	}
	rs, err := d.Research()
	if err != nil {
		return nil, nil, err
	}
	ar := interact.AgentRequest{Agent: in.Agent, Input: in.Query, CollaborativePlanning: in.Plan,
		ThinkingSummaries: in.ThinkingSummaries == nil || *in.ThinkingSummaries}
	urls, err := Grounding{URLs: in.URLs}.urls()
	if err != nil {
		return nil, nil, err
	}
	if in.ContinueFrom != "" {
		owner := d.Conv.CallOf(ctx, req).Who.Token
		if ar.PreviousID, err = d.interactionOf(ctx, owner, in.ContinueFrom); err != nil {
			return nil, nil, err
		}
	}
	// The files are read last, once everything else is known to be in
	// order.
	files, err := d.researchFiles(ctx, in.Files, &ar)
	if err != nil {
		return nil, nil, err
	}
	if len(urls) > 0 {
		ar.Context = append(ar.Context, researchURLsHeading+strings.Join(urls, "\n"))
	}
	// The job is reserved first, so that a caller at the job limit starts
	// (and pays for) nothing; then the interaction is started in the
	// call, so that a refused agent or key fails it (and the job) at once.
	j, err := d.Conv.CreateJob(ctx, req, "research")
	if err != nil {
		return nil, nil, err
	}
	first, err := rs.StartAgent(ctx, ar)
	if err != nil {
		err = fmt.Errorf("research: %w", err)
		d.failUnstarted(ctx, j, err)
		return nil, nil, err
	}
	r := &researchRun{jobs: d.Jobs, rs: rs, id: first.ID, every: d.ResearchPoll, limit: d.ResearchLimit, files: files, page: d.Conv.PageText}
	d.Conv.RunJob(ctx, j, r.run, r.cancel)
	if in.Wait > 0 {
		if j, err = waitJob(ctx, d.Jobs, j, time.Duration(in.Wait*float64(time.Second)), false); err != nil {
			return nil, nil, jobError(err)
		}
		if j.Status.Final() {
			return jobResult(j)
		}
	}
	res := conversation.StartedJob(j)
	res.Meta["interactionId"] = first.ID
	addFilesMeta(res, files)
	return res, nil, nil
}

// failUnstarted fails research job j, whose interaction could not be
// started, with err: the job was reserved for nothing.
func (d *Deps) failUnstarted(ctx context.Context, j jobs.Job, err error) {
	sctx, done := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer done()
	_, _ = jobs.Update(sctx, d.Jobs, j.Owner, j.ID, func(j *jobs.Job) (bool, error) {
		if j.Status.Final() {
			return false, nil
		}
		return true, j.Fail(err.Error(), time.Now())
	})
}

// addFilesMeta says in res's _meta what of research's files was sent and
// left out, when it named files: in the answer that starts the job and
// in the report, whether a wait returns it or the job tool does.
func addFilesMeta(res *mcp.CallToolResult, files *filectx.Files) {
	meta := filesMeta(files)
	if meta == nil {
		return
	}
	if res.Meta == nil {
		res.Meta = mcp.Meta{}
	}
	maps.Copy(res.Meta, meta)
}

// filesMeta is what addFilesMeta adds, nil without files.
func filesMeta(files *filectx.Files) map[string]any {
	if files == nil {
		return nil
	}
	return map[string]any{"filesProcessed": notes(files.Processed), "filesSkipped": notes(files.Skipped)}
}

// addStoredMeta adds to res's _meta the entries a job's record kept for
// its result (jobs.Job.ResultMeta), those the result does not have.
func addStoredMeta(res *mcp.CallToolResult, stored json.RawMessage) {
	var meta map[string]json.RawMessage
	if len(stored) == 0 || json.Unmarshal(stored, &meta) != nil || len(meta) == 0 {
		return
	}
	if res.Meta == nil {
		res.Meta = mcp.Meta{}
	}
	for k, v := range meta {
		if _, ok := res.Meta[k]; !ok {
			res.Meta[k] = v
		}
	}
}

// interactionOf is the interaction of owner's research job named by
// ref: its id, or the interaction id itself when a job of owner's has
// it (the store's index of resume handles: the cost is one job's, however
// many owner has). Another caller's job or interaction is not found.
func (d *Deps) interactionOf(ctx context.Context, owner, ref string) (string, error) {
	if jobs.CheckID(ref) == nil {
		j, ok, err := d.Jobs.GetJob(ctx, owner, ref)
		if err != nil {
			return "", jobError(err)
		}
		if ok && j.Tool == "research" && j.Resume != "" {
			return j.Resume, nil
		}
	}
	j, ok, err := d.Jobs.FindJob(ctx, owner, ref)
	if err != nil {
		return "", jobError(err)
	}
	if ok && j.Tool == "research" {
		return j.Resume, nil
	}
	return "", fmt.Errorf("continue_from: no research job of this caller has the id or interaction id %q (it may have expired)", clipArg(ref))
}

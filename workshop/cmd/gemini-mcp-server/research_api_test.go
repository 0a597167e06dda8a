package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
)

// startResearch calls research and returns its job's id, failing t unless
// the call answered at once with one.
func startResearch(t *testing.T, cs *mcp.ClientSession, args map[string]any) string {
	t.Helper()
	res := callOK(t, cs, "research", args)
	id, _ := res.Meta["jobId"].(string)
	if id == "" || !strings.Contains(resultText(res), "Started job "+id) || res.Meta["interactionId"] == nil {
		t.Fatalf("research %v: %s %+v", args, resultText(res), res.Meta)
	}
	return id
}

// TestResearchStdio: over stdio on the API backend, research answers at
// once with a job, which the job tool polls to a cited report; a failed
// interaction fails its job with why; a cancelled job cancels its
// interaction; a plan is approved with continue_from; on a CLI backend
// research is refused, naming --backend api.
func TestResearchStdio(t *testing.T) {
	t.Parallel()
	e, fake := apiEnv(t)
	cs := connect(t, e.command("--backend", "api"))

	q := "the history of tea [[steps:0]]"
	res, err := jobEnd(t, cs, startResearch(t, cs, map[string]any{"query": q}), nil)
	if err != nil || res.IsError {
		t.Fatalf("the research: %v %s", err, resultText(res))
	}
	if text := resultText(res); !strings.HasPrefix(text, fakeapi.ReportText(q)) ||
		!strings.Contains(text, "Sources:\n1. Fake source one: https://example.com/one\n2. Fake source two: https://example.com/two") {
		t.Errorf("the report:\n%s", text)
	}
	var links []string
	for _, c := range res.Content {
		if l, ok := c.(*mcp.ResourceLink); ok {
			links = append(links, l.URI)
		}
	}
	if !slices.Equal(links, []string{"https://example.com/one", "https://example.com/two"}) {
		t.Errorf("the resource links %v", links)
	}
	if cites, _ := res.Meta["citations"].([]any); len(cites) != 2 || res.Meta["interactionId"] == nil {
		t.Errorf("_meta %v", res.Meta)
	}

	res, err = jobEnd(t, cs, startResearch(t, cs, map[string]any{"query": "doomed [[steps:0]] [[final:failed]]"}), nil)
	if err != nil || !res.IsError || !strings.Contains(resultText(res), fakeapi.InteractionFailedMessage) {
		t.Errorf("the failed research: %v %s", err, resultText(res))
	}

	res, err = jobEnd(t, cs, startResearch(t, cs, map[string]any{"query": "forever [[hold]]"}), map[string]any{"cancel": true})
	if err != nil || res.Meta["jobStatus"] != "cancelled" {
		t.Errorf("the cancelled research: %v %s %v", err, resultText(res), res.Meta)
	}
	err = fake.WaitFor(geminitest.Context(t), func(reqs []fakeapi.Request) bool {
		return slices.ContainsFunc(reqs, func(r fakeapi.Request) bool { return r.Method == fakeapi.MethodInteractionCancel })
	})
	if err != nil {
		t.Errorf("the interaction was not cancelled: %v", err)
	}

	plan := "plan the tea study [[steps:0]]"
	planJob := startResearch(t, cs, map[string]any{"query": plan, "plan": true})
	res, err = jobEnd(t, cs, planJob, nil)
	if err != nil || res.IsError || res.Meta["plan"] != true || !strings.HasPrefix(resultText(res), fakeapi.PlanText(plan)) {
		t.Fatalf("the plan: %v %s %v", err, resultText(res), res.Meta)
	}
	res, err = jobEnd(t, cs, startResearch(t, cs, map[string]any{"query": "go ahead [[steps:0]]", "continue_from": planJob}), nil)
	if err != nil || res.IsError || res.Meta["plan"] == true || !strings.Contains(resultText(res), "Sources:") {
		t.Errorf("the approved research: %v %s", err, resultText(res))
	}

	cli := connect(t, newEnv(t).command())
	callErr(t, cli, "research", map[string]any{"query": "tea"}, "--backend api")
}

// TestResearchOnReplicas: two HTTP replicas on one real redis-server: a
// research job started on A is polled to its report on B; another one,
// cancelled on B, has its interaction cancelled by A; token two can
// neither read, cancel nor continue token one's jobs.
func TestResearchOnReplicas(t *testing.T) {
	t.Parallel()
	e, fake := apiEnv(t)
	e.vars = append(e.vars, "GEMINI_MCP_TOKENS="+tokenOne+","+tokenTwo)
	args := []string{"--stateless", "--backend", "api", "--store", redistest.Start(t).URL(0)}
	addrA, _ := startHTTP(t, e, args...)
	addrB, _ := startHTTP(t, e, args...)
	a, b := httpClient(t, addrA, tokenOne), httpClient(t, addrB, tokenOne)

	q := "started on A [[steps:0]]"
	res, err := jobEnd(t, b, startResearch(t, a, map[string]any{"query": q}), nil)
	if err != nil || res.IsError || !strings.HasPrefix(resultText(res), fakeapi.ReportText(q)) {
		t.Fatalf("the research on B: %v %s", err, resultText(res))
	}

	id := startResearch(t, a, map[string]any{"query": "to cancel [[hold]]"})
	other := httpClient(t, addrB, tokenTwo)
	for _, args := range []map[string]any{{"jobId": id}, {"jobId": id, "cancel": true}} {
		if res, err := callTool(other, "job", args); err != nil || !res.IsError || !strings.Contains(resultText(res), "no such job") {
			t.Errorf("token two's job %v: %v %s", args, err, resultText(res))
		}
	}
	callErr(t, other, "research", map[string]any{"query": "go ahead", "continue_from": id}, "no research job of this caller")
	res, err = jobEnd(t, b, id, map[string]any{"cancel": true})
	if err != nil || res.Meta["jobStatus"] != "cancelled" {
		t.Fatalf("the cancelled research on B: %v %s %+v", err, resultText(res), res)
	}
	err = fake.WaitFor(geminitest.Context(t), func(reqs []fakeapi.Request) bool {
		return slices.ContainsFunc(reqs, func(r fakeapi.Request) bool { return r.Method == fakeapi.MethodInteractionCancel })
	})
	if err != nil {
		t.Errorf("the interaction was not cancelled: %v", err)
	}
}

// TestResearchResumedAfterRestart: a research job whose server stopped
// mid-run is left running; once its heartbeat is stale, job on a server
// started anew on the same store resumes polling the same interaction
// and returns its report. (It waits for jobs.StaleAfter, a minute.)
func TestResearchResumedAfterRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("waits a minute for the job's heartbeat to go stale")
	}
	t.Parallel()
	e, fake := apiEnv(t)
	first := connect(t, e.command("--backend", "api"))
	q := "outlives its server [[steps:3]]"
	id := startResearch(t, first, map[string]any{"query": q})
	// The first poll comes after the job has recorded its interaction.
	err := fake.WaitFor(geminitest.Context(t), func(reqs []fakeapi.Request) bool {
		return slices.ContainsFunc(reqs, func(r fakeapi.Request) bool { return r.Method == fakeapi.MethodInteractionGet })
	})
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	// Under callTool's minute, each call waits half of one.
	res, err := jobEnd(t, connect(t, e.command("--backend", "api")), id, map[string]any{"wait": 30})
	if err != nil || res.IsError || !strings.HasPrefix(resultText(res), fakeapi.ReportText(q)) {
		t.Fatalf("the resumed research: %v %s", err, resultText(res))
	}
	if n := len(fake.Interactions()); n != 1 {
		t.Errorf("%d interactions, want the one resumed", n)
	}
}

package main

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
)

// startJob calls tool with background: true and returns the job's id,
// failing t unless the call answered at once with one.
func startJob(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	bg := map[string]any{"background": true}
	for k, v := range args {
		bg[k] = v
	}
	res := callOK(t, cs, tool, bg)
	id, _ := res.Meta["jobId"].(string)
	if id == "" || !strings.Contains(resultText(res), "Started job "+id) || res.Meta["jobStatus"] != "working" {
		t.Fatalf("%s with background: %s %+v", tool, resultText(res), res.Meta)
	}
	return id
}

// jobEnd calls job on id, waiting, until the job has ended, and returns
// the last answer: the job's result or error.
func jobEnd(t *testing.T, cs *mcp.ClientSession, id string, more map[string]any) (*mcp.CallToolResult, error) {
	t.Helper()
	args := map[string]any{"jobId": id, "wait": 60}
	for k, v := range more {
		args[k] = v
	}
	for range 20 { // a failure guard only: each call waits for a change
		res, err := callTool(cs, "job", args)
		if err != nil {
			return nil, err
		}
		if s, _ := res.Meta["jobStatus"].(string); s != "queued" && s != "working" {
			return res, nil
		}
		delete(args, "cancel")
	}
	t.Fatalf("job %s did not end", id)
	return nil, nil
}

var (
	uuidRE  = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timesRE = regexp.MustCompile(`"[A-Za-z]*(?:[Ee]lapsed[A-Za-z]*|Ms)":[0-9.]+|[0-9.]+ ?(?:ms|s)\b`)
)

// normal is res as JSON, without its ids and timings.
func normal(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return timesRE.ReplaceAllString(uuidRE.ReplaceAllString(string(raw), "<id>"), "<t>")
}

// TestBackgroundJobsStdio: over stdio, chat and an expert tool with
// background: true answer at once with a job id, and the job tool returns
// the result the synchronous call returns (a failure too: chat's error
// result, the expert tool's JSON-RPC error); bad arguments of job are
// clear errors.
func TestBackgroundJobsStdio(t *testing.T) {
	t.Parallel()
	e, _ := apiEnv(t)
	cs := connect(t, e.command("--backend", "api"))

	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"chat", map[string]any{"prompt": "the same question"}},
		{"chat", map[string]any{"prompt": "[[status:400]] a refused question"}},
		{"thinkdeep", map[string]any{"current_analysis": "the same plan"}},
		{"thinkdeep", map[string]any{"current_analysis": "[[status:400]] a refused plan"}},
	} {
		want, wantErr := callTool(cs, c.tool, c.args)
		id := startJob(t, cs, c.tool, c.args)
		got, gotErr := jobEnd(t, cs, id, nil)
		if (wantErr == nil) != (gotErr == nil) || (wantErr != nil && normal(t, wantErr.Error()) != normal(t, gotErr.Error())) {
			t.Errorf("%s %v: the job's error %v, the call's %v", c.tool, c.args, gotErr, wantErr)
			continue
		}
		if w, g := normal(t, want), normal(t, got); w != g {
			t.Errorf("%s %v: the job's result\n%s\nthe call's\n%s", c.tool, c.args, g, w)
		}
	}

	// A tool with an output schema runs only in the foreground: the
	// result naming a job would not conform to it.
	if _, err := callTool(cs, "codereview", map[string]any{"files": []string{"a.go"}, "background": true}); err == nil || !strings.Contains(err.Error(), "unknown argument") {
		t.Errorf("codereview with background: %v, want it refused", err)
	}

	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"jobId": "nope"}, "is not a job id"},
		{map[string]any{"jobId": "00000000-0000-4000-8000-000000000000"}, "no such job"},
		{map[string]any{"jobId": "00000000-0000-4000-8000-000000000000", "wait": 61}, "wait"},
		{map[string]any{"jobId": "00000000-0000-4000-8000-000000000000", "wait": -1}, "wait"},
		{map[string]any{}, "jobId"},
	} {
		res, err := callTool(cs, "job", c.args)
		if err != nil || !res.IsError || !strings.Contains(resultText(res), c.want) {
			t.Errorf("job %v: %v %s; want an error about %q", c.args, err, resultText(res), c.want)
		}
	}
}

// TestBackgroundJobsOnReplicas: two HTTP replicas on one real
// redis-server: a job started on A is polled and its result read on B;
// cancelled on B, A's turn stops (the fake API sees its request end) and
// the job ends cancelled; another token's job is unknown.
func TestBackgroundJobsOnReplicas(t *testing.T) {
	t.Parallel()
	e, fake := apiEnv(t)
	e.vars = append(e.vars, "GEMINI_MCP_TOKENS="+tokenOne+","+tokenTwo)
	args := []string{"--stateless", "--backend", "api", "--store", redistest.Start(t).URL(0)}
	addrA, _ := startHTTP(t, e, args...)
	addrB, _ := startHTTP(t, e, args...)
	a, b := httpClient(t, addrA, tokenOne), httpClient(t, addrB, tokenOne)

	id := startJob(t, a, "chat", map[string]any{"prompt": "started on A"})
	res, err := jobEnd(t, b, id, nil)
	if err != nil || res.IsError || !strings.Contains(answerOf(res), "started on A") || res.Meta["sessionId"] == nil {
		t.Fatalf("the job on B: %v %s %+v", err, resultText(res), res)
	}

	id = startJob(t, a, "chat", map[string]any{"prompt": "[[stall]] a turn to cancel"})
	waitArrived(t, fake, "a turn to cancel")
	other := httpClient(t, addrB, tokenTwo)
	for _, args := range []map[string]any{{"jobId": id}, {"jobId": id, "cancel": true}} {
		if res, err := callTool(other, "job", args); err != nil || !res.IsError || !strings.Contains(resultText(res), "no such job") {
			t.Errorf("token two's job %v: %v %s", args, err, resultText(res))
		}
	}
	if res, err := callTool(b, "job", map[string]any{"jobId": id}); err != nil || res.Meta["jobStatus"] != "working" {
		t.Fatalf("the running job on B: %v %s %+v", err, resultText(res), res)
	}
	res, err = jobEnd(t, b, id, map[string]any{"cancel": true})
	if err != nil || res.Meta["jobStatus"] != "cancelled" {
		t.Fatalf("the cancelled job on B: %v %s %+v", err, resultText(res), res)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a failure guard only
	defer cancel()
	if err := geminitest.Poll(ctx, "the cancelled turn's request to end", func() (bool, error) {
		for _, r := range fake.Requests() {
			if strings.Contains(r.LastUserText, "a turn to cancel") && r.Ended {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		t.Error(err)
	}
}

// TestBackgroundJobSurvivesRestart: a finished job's result is kept in
// the embedded store: a server started after the one that ran it returns
// the same result.
func TestBackgroundJobSurvivesRestart(t *testing.T) {
	t.Parallel()
	e, _ := apiEnv(t)
	first := connect(t, e.command("--backend", "api"))
	id := startJob(t, first, "chat", map[string]any{"prompt": "kept across a restart"})
	want, err := jobEnd(t, first, id, nil)
	if err != nil || want.IsError {
		t.Fatalf("the job: %v %s", err, resultText(want))
	}
	first.Close()
	got, err := jobEnd(t, connect(t, e.command("--backend", "api")), id, nil)
	if err != nil || normal(t, got) != normal(t, want) {
		t.Errorf("the job after a restart: %v %s, want %s", err, normal(t, got), normal(t, want))
	}
}

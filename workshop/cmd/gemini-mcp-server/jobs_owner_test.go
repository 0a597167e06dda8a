package main

import (
	"strings"
	"testing"
)

// TestJobsOwnedAcrossTransports: on one stateful HTTP server with tokens,
// a job started by token one over /sse is read by token one over /mcp
// (the job is the caller's, not the session's), and is no job at all to
// token two over either transport, for a read, a wait and a cancel; a
// job id of the right shape that no one has is the same answer.
func TestJobsOwnedAcrossTransports(t *testing.T) {
	t.Parallel()
	e, _ := apiEnv(t)
	e.vars = append(e.vars, "GEMINI_MCP_TOKENS="+tokenOne+","+tokenTwo)
	addr, _ := startHTTP(t, e, "--backend", "api")
	oneSSE := connectAs(t, addr, "sse", tokenOne, nil, "")
	oneMCP := connectAs(t, addr, "mcp", tokenOne, nil, "")

	id := startJob(t, oneSSE, "chat", map[string]any{"prompt": "started over sse"})
	res, err := jobEnd(t, oneMCP, id, nil)
	if err != nil || res.IsError || !strings.Contains(answerOf(res), "started over sse") {
		t.Fatalf("token one's job over /mcp: %v %s", err, resultText(res))
	}
	for _, transport := range []string{"sse", "mcp"} {
		two := connectAs(t, addr, transport, tokenTwo, nil, "")
		for _, args := range []map[string]any{{"jobId": id}, {"jobId": id, "wait": 1}, {"jobId": id, "cancel": true},
			{"jobId": "00000000-0000-4000-8000-000000000000"}} {
			res, err := callTool(two, "job", args)
			if err != nil || !res.IsError || !strings.Contains(resultText(res), "no such job") || strings.Contains(resultText(res), "started over sse") {
				t.Errorf("token two over /%s, job %v: %v %s", transport, args, err, resultText(res))
			}
		}
	}
	// Token two's tries changed nothing: token one still reads its result.
	if res, err := callTool(oneSSE, "job", map[string]any{"jobId": id}); err != nil || res.IsError || !strings.Contains(answerOf(res), "started over sse") {
		t.Fatalf("token one's job after token two's tries: %v %s", err, resultText(res))
	}
}

// TestResearchOwnedOverSSE: a research job started by token one over /sse
// (a stateful server, not the stateless replicas) is polled to its report
// by token one over /mcp; token two over /sse can neither read it nor
// continue from it, by its job id or by its interaction id.
func TestResearchOwnedOverSSE(t *testing.T) {
	t.Parallel()
	e, _ := apiEnv(t)
	e.vars = append(e.vars, "GEMINI_MCP_TOKENS="+tokenOne+","+tokenTwo)
	addr, _ := startHTTP(t, e, "--backend", "api")
	oneSSE := connectAs(t, addr, "sse", tokenOne, nil, "")
	res := callOK(t, oneSSE, "research", map[string]any{"query": "over sse [[steps:0]] [[plan]]", "plan": true})
	id, _ := res.Meta["jobId"].(string)
	interaction, _ := res.Meta["interactionId"].(string)
	if id == "" || interaction == "" {
		t.Fatalf("research over /sse: %s %+v", resultText(res), res.Meta)
	}
	twoSSE := connectAs(t, addr, "sse", tokenTwo, nil, "")
	if res, err := callTool(twoSSE, "job", map[string]any{"jobId": id}); err != nil || !res.IsError || !strings.Contains(resultText(res), "no such job") {
		t.Errorf("token two's read of token one's research: %v %s", err, resultText(res))
	}
	for _, ref := range []string{id, interaction} {
		callErr(t, twoSSE, "research", map[string]any{"query": "go ahead", "continue_from": ref}, "no research job of this caller")
	}
	res, err := jobEnd(t, connectAs(t, addr, "mcp", tokenOne, nil, ""), id, nil)
	if err != nil || res.IsError || res.Meta["jobStatus"] != nil && res.Meta["jobStatus"] != "completed" {
		t.Fatalf("token one's research over /mcp: %v %s %+v", err, resultText(res), res.Meta)
	}
	// Token one may continue from it, by its interaction id too.
	if res := callOK(t, oneSSE, "research", map[string]any{"query": "go ahead [[steps:0]]", "continue_from": interaction}); res.Meta["jobId"] == nil {
		t.Fatalf("token one's continue_from: %s %+v", resultText(res), res.Meta)
	}
}

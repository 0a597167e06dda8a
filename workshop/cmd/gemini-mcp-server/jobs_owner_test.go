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

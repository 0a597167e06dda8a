package main

import (
	"strings"
	"testing"
)

// TestPagesOwned: over HTTP with tokens, the pages of a long answer are
// its token's, as its session is: another token's chat-page of the
// answerId, from a call or from a background job's result, over /mcp or
// /sse, is an unknown answer, and shows none of it; the token that made
// it reads every page, on a stateless server from a request of its own.
func TestPagesOwned(t *testing.T) {
	t.Parallel()
	for _, stateless := range []bool{false, true} {
		e, _ := apiEnv(t)
		e.vars = append(e.vars, "GEMINI_MCP_TOKENS="+tokenOne+","+tokenTwo)
		args := []string{"--backend", "api", "--max-answer-bytes", "1000"}
		transports := []string{"mcp", "sse"}
		if stateless {
			args, transports = append(args, "--stateless"), []string{"mcp"}
		}
		addr, _ := startHTTP(t, e, args...)
		one := connectAs(t, addr, "mcp", tokenOne, nil, "")
		called := callOK(t, one, "chat", map[string]any{"prompt": "token one's long answer [[bytes:3000]]"})
		job, err := jobEnd(t, one, startJob(t, one, "chat", map[string]any{"prompt": "token one's long job [[bytes:3000]]"}), nil)
		if err != nil || job.IsError {
			t.Fatalf("the job: %v %s", err, resultText(job))
		}
		for _, res := range []map[string]any{called.Meta, job.Meta} {
			id, _ := res["answerId"].(string)
			if id == "" {
				t.Fatalf("stateless %v: no answerId in %v", stateless, res)
			}
			for _, transport := range transports {
				two := connectAs(t, addr, transport, tokenTwo, nil, "")
				got, err := callTool(two, "chat-page", map[string]any{"answerId": id, "page": 2})
				if err != nil || !got.IsError || !strings.Contains(resultText(got), "unknown or expired answerId") || strings.Contains(resultText(got), "filler") {
					t.Errorf("stateless %v: token two's chat-page over /%s of token one's answer: %v %.300s", stateless, transport, err, resultText(got))
				}
			}
			again := connectAs(t, addr, transports[len(transports)-1], tokenOne, nil, "")
			if got := callOK(t, again, "chat-page", map[string]any{"answerId": id, "page": 2}); !strings.Contains(resultText(got), "filler") {
				t.Errorf("stateless %v: token one's own page 2: %.300s", stateless, resultText(got))
			}
		}
	}
}

// TestResearchReportPaged: a research report longer than
// --max-answer-bytes comes from job as its first page, as a long chat
// answer does, and chat-page gives its caller the rest, whole; another
// token's chat-page of it is an unknown answer. It came whole in one
// result, 200 KB against a page of 20 KB.
func TestResearchReportPaged(t *testing.T) {
	t.Parallel()
	e, _ := apiEnv(t)
	e.vars = append(e.vars, "GEMINI_MCP_TOKENS="+tokenOne+","+tokenTwo)
	addr, _ := startHTTP(t, e, "--backend", "api", "--max-answer-bytes", "20000")
	one := connectAs(t, addr, "mcp", tokenOne, nil, "")
	res := callOK(t, one, "research", map[string]any{"query": "a long report [[steps:0]] [[report-bytes:200000]]"})
	end, err := jobEnd(t, one, res.Meta["jobId"].(string), nil)
	if err != nil || end.IsError {
		t.Fatalf("the report: %v %.300s", err, resultText(end))
	}
	id, _ := end.Meta["answerId"].(string)
	pages, _ := end.Meta["pages"].(float64)
	if id == "" || pages < 10 || len(resultText(end)) > 21000 || end.Meta["interactionId"] == nil || len(end.Content) < 2 {
		t.Fatalf("the report's first page: %d bytes, %d items, _meta %v", len(resultText(end)), len(end.Content), end.Meta)
	}
	whole := answerOf(end)
	for p := 2; p <= int(pages); p++ {
		whole += answerOf(callOK(t, one, "chat-page", map[string]any{"answerId": id, "page": p}))
	}
	if len(whole) < 200000 || !strings.Contains(whole, "Sources:") {
		t.Errorf("the report from its pages: %d bytes", len(whole))
	}
	two := connectAs(t, addr, "mcp", tokenTwo, nil, "")
	if got, err := callTool(two, "chat-page", map[string]any{"answerId": id, "page": 2}); err != nil || !got.IsError || !strings.Contains(resultText(got), "unknown or expired answerId") {
		t.Errorf("token two's chat-page of token one's report: %v %.300s", err, resultText(got))
	}
}

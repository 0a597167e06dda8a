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

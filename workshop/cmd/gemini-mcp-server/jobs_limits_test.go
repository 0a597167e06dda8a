package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// TestJobLimitsUnderConcurrentCreates: 121 background calls at once over
// HTTP, of chat and an expert tool, from 11 tokens on a stateless server:
// exactly 100 jobs start (the server's limit), no token gets more than 10
// (its own), and every other call is refused saying which limit it met.
func TestJobLimitsUnderConcurrentCreates(t *testing.T) {
	t.Parallel()
	e, _ := apiEnv(t)
	var tokens []string
	for i := range 11 {
		tokens = append(tokens, fmt.Sprintf("limits-token-%02d-0123456789", i))
	}
	e.vars = append(e.vars, "GEMINI_MCP_TOKENS="+strings.Join(tokens, ","))
	addr, _ := startHTTP(t, e, "--backend", "api", "--stateless")
	var mu sync.Mutex
	started := map[string]int{}
	total := 0
	var wg sync.WaitGroup
	for i := range 121 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			token := tokens[i%len(tokens)]
			cs := httpClient(t, addr, token)
			tool, args := "chat", map[string]any{"prompt": fmt.Sprintf("[[stall]] job %d", i), "background": true}
			if i%3 == 0 {
				tool, args = "thinkdeep", map[string]any{"current_analysis": fmt.Sprintf("[[stall]] job %d", i), "background": true}
			}
			res, err := callTool(cs, tool, args)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && !res.IsError && res.Meta["jobId"] != nil:
				started[token]++
				total++
			case err == nil && res.IsError && strings.Contains(resultText(res), "too many jobs: "):
			case err != nil && strings.Contains(err.Error(), "too many jobs: "):
			default:
				t.Errorf("%s %d: %v %s", tool, i, err, resultText(res))
			}
		}()
	}
	wg.Wait()
	if total != 100 {
		t.Errorf("%d jobs started, want the server's 100", total)
	}
	for token, n := range started {
		if n > 10 {
			t.Errorf("%s started %d jobs, over its 10", token, n)
		}
	}
}

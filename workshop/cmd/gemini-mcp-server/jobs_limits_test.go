package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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

// TestBackgroundOwnedEveryTool: on a stateful HTTP server with tokens,
// each tool that takes background (chat, chat-reply, thinkdeep, analyze,
// debug), called so over /sse by token one, makes a job of token one's:
// token two over /mcp or /sse can neither read, wait on nor cancel it,
// and 20 cancels of token one's at once, beside 20 of token two's, stop
// it once, as cancelled.
func TestBackgroundOwnedEveryTool(t *testing.T) {
	t.Parallel()
	e, _ := apiEnv(t)
	if err := os.WriteFile(filepath.Join(e.work, "a.go"), []byte("package a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.vars = append(e.vars, "GEMINI_MCP_TOKENS="+tokenOne+","+tokenTwo)
	addr, _ := startHTTP(t, e, "--backend", "api")
	one := connectAs(t, addr, "sse", tokenOne, nil, "")
	session := callOK(t, one, "chat", map[string]any{"prompt": "a session to reply to"}).Meta["sessionId"]
	twos := []*mcp.ClientSession{connectAs(t, addr, "mcp", tokenTwo, nil, ""), connectAs(t, addr, "sse", tokenTwo, nil, "")}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"chat", map[string]any{"prompt": "[[stall]] chat"}},
		{"chat-reply", map[string]any{"prompt": "[[stall]] chat-reply", "sessionId": session}},
		{"thinkdeep", map[string]any{"current_analysis": "[[stall]] thinkdeep"}},
		{"analyze", map[string]any{"question": "[[stall]] analyze", "files": []string{"a.go"}}},
		{"debug", map[string]any{"error_description": "[[stall]] debug"}},
	} {
		id := startJob(t, one, c.tool, c.args)
		var wg sync.WaitGroup
		for i := range 40 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i%2 == 0 {
					res, err := callTool(one, "job", map[string]any{"jobId": id, "cancel": true})
					if s, _ := res.Meta["jobStatus"].(string); err != nil || s != "cancelled" && res.Meta["cancelRequested"] != true {
						t.Errorf("%s: token one's cancel: %v %s", c.tool, err, resultText(res))
					}
					return
				}
				args := []map[string]any{{"jobId": id}, {"jobId": id, "wait": 1}, {"jobId": id, "cancel": true}}[i%3]
				res, err := callTool(twos[i%2], "job", args)
				if err != nil || !res.IsError || !strings.Contains(resultText(res), "no such job") || strings.Contains(resultText(res), "[[stall]]") {
					t.Errorf("%s: token two's job %v: %v %s", c.tool, args, err, resultText(res))
				}
			}()
		}
		wg.Wait()
		if res, err := jobEnd(t, one, id, nil); err != nil || res.Meta["jobStatus"] != "cancelled" {
			t.Errorf("%s: the job after the cancels: %v %s", c.tool, err, resultText(res))
		}
	}
}

package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
)

// TestRedisLostMidRun kills the redis-server under a running HTTP server:
// calls that need the store fail saying so, while /healthz and tools/list
// still answer; once redis-server is back on its port, the same server
// process serves calls again, and it still exits cleanly on SIGTERM.
func TestRedisLostMidRun(t *testing.T) {
	redis := redistest.Start(t)
	e, fake := apiEnv(t)
	addr, stop := startHTTP(t, e, "--stateless", "--backend", "api", "--store", redis.URL(0))
	cs := httpClient(t, addr, "")
	before := callOK(t, cs, "chat", map[string]any{"prompt": "before the loss"})
	id, _ := before.Meta["sessionId"].(string)

	redis.Kill()
	asked := len(streams(fake))
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"chat-reply", map[string]any{"prompt": "while Redis is down", "sessionId": id}},
		{"chat", map[string]any{"prompt": "a new chat while Redis is down"}},
		{"sessions", map[string]any{}},
	} {
		res, err := callTool(cs, c.tool, c.args)
		if err != nil || !res.IsError || !strings.Contains(resultText(res), "the session store is unavailable") {
			t.Errorf("%s while Redis is down: %v %q %+v", c.tool, err, resultText(res), res.Meta)
		}
	}
	if n := len(streams(fake)); n != asked {
		t.Errorf("%d turns reached Gemini while the store was down", n-asked)
	}
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("/healthz while Redis is down: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "v9.8.7-test") {
		t.Errorf("/healthz while Redis is down: %s %s", resp.Status, body)
	}
	if tools, err := cs.ListTools(t.Context(), nil); err != nil || len(tools.Tools) == 0 {
		t.Errorf("tools/list while Redis is down: %v", err)
	}

	// Back on the same port, empty (the test server keeps nothing on
	// disk): the same process serves a new conversation.
	redis.Restart()
	after := callOK(t, cs, "chat", map[string]any{"prompt": "after the return"})
	callOK(t, cs, "chat-reply", map[string]any{"prompt": "and its reply", "sessionId": after.Meta["sessionId"]})
	carries(t, lastStream(t, fake, "and its reply"), "after the return", answerOf(after))

	start := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("shutdown took %v", d)
	}
}

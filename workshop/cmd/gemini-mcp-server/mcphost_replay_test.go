package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// The MCP host's tool turns replayed by chat-reply, before and after a
// restart (helpers in mcphost_test.go).

// TestHostReplyReplaysToolTurns: chat-reply on a session whose first turn
// called a tool sends that turn again whole: the fake API sees the
// earlier functionCall and functionResponse.
func TestHostReplyReplaysToolTurns(t *testing.T) {
	t.Parallel()
	h := newHostEnv(t, map[string]any{"down": down(t, map[string]any{"trust": true}, "-tool", "echo")})
	cs := h.stdio(t, nil, "")
	h.connected(t, "down")
	_, id := chat(t, cs, "chat", map[string]any{"prompt": `[[call:mcp_down_echo:{"text":"first"}]]`})
	if id == "" {
		t.Fatal("no sessionId")
	}
	text, id2 := chat(t, cs, "chat-reply", map[string]any{"prompt": "and then?", "sessionId": id})
	if id2 != id {
		t.Errorf("sessionId %q, want %q", id2, id)
	}
	var reply *fakeapi.Request
	for _, r := range h.api.Requests() {
		if r.Method == fakeapi.MethodStream && r.LastUserText == "and then?" {
			reply = &r
		}
	}
	if reply == nil {
		t.Fatalf("the reply did not reach the API; answer %q", text)
	}
	// The prompt, the call, its result, the answer, the new prompt.
	if reply.NumContents != 5 {
		t.Errorf("the reply sent %d contents, want 5:\n%s", reply.NumContents, reply.Body)
	}
	var body struct {
		Contents []struct {
			Role  string            `json:"role"`
			Parts []json.RawMessage `json:"parts"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(reply.Body, &body); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, c := range body.Contents {
		for _, p := range c.Parts {
			var part map[string]json.RawMessage
			json.Unmarshal(p, &part)
			switch {
			case part["functionCall"] != nil:
				kinds = append(kinds, c.Role+":call "+string(part["functionCall"]))
			case part["functionResponse"] != nil:
				kinds = append(kinds, c.Role+":result "+string(part["functionResponse"]))
			case part["text"] != nil:
				kinds = append(kinds, c.Role+":text")
			}
		}
	}
	ok := len(kinds) == 5 && kinds[0] == "user:text" && kinds[3] == "model:text" && kinds[4] == "user:text"
	for _, k := range []string{"model:call ", "user:result "} {
		i := map[string]int{"model:call ": 1, "user:result ": 2}[k]
		ok = ok && len(kinds) == 5 && strings.HasPrefix(kinds[i], k) &&
			strings.Contains(kinds[i], `"name":"mcp_down_echo"`) && strings.Contains(kinds[i], "first")
	}
	if !ok {
		t.Errorf("the reply's contents:\n%s", strings.Join(kinds, "\n"))
	}
}

// TestHostReplyAfterRestart: the tool calls of a turn are stored with it,
// so chat-reply on a restarted server (the same state directory) still
// sends them to Gemini.
func TestHostReplyAfterRestart(t *testing.T) {
	t.Parallel()
	h := newHostEnv(t, map[string]any{"down": down(t, map[string]any{"trust": true}, "-tool", "echo")})
	cs := h.stdio(t, nil, "")
	h.connected(t, "down")
	_, id := chat(t, cs, "chat", map[string]any{"prompt": `[[call:mcp_down_echo:{"text":"stored"}]]`})
	cs.Close()
	cs = h.stdio(t, nil, "")
	chat(t, cs, "chat-reply", map[string]any{"prompt": "after restart", "sessionId": id})
	var reply *fakeapi.Request
	for _, r := range h.api.Requests() {
		if r.Method == fakeapi.MethodStream && r.LastUserText == "after restart" {
			reply = &r
		}
	}
	if reply == nil || reply.NumContents != 5 || !bytes.Contains(reply.Body, []byte(`"functionCall"`)) ||
		!bytes.Contains(reply.Body, []byte(`"functionResponse"`)) || !bytes.Contains(reply.Body, []byte("stored")) {
		t.Fatalf("the reply after the restart: %+v", reply)
	}
}

package main

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// TestExpertToolsConfirmThroughElicitation: an expert tool whose Gemini
// turn calls a tool of an untrusted downstream server asks the client's
// user, as chat does, under both protocol generations; allowed, the tool
// runs, and Gemini gets its result.
func TestExpertToolsConfirmThroughElicitation(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			h := newHostEnv(t, map[string]any{"db": down(t, nil, "-tool", "query")})
			var mu sync.Mutex
			var asked []string
			cs := h.stdio(t, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, req.Params.Message)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}, nil
			}}, protocol)
			h.connected(t, "db")
			res, err := cs.CallTool(guardCtx(t), &mcp.CallToolParams{Name: "debug",
				Arguments: map[string]any{"error_description": `the query fails [[call:mcp_db_query:{"sql":"select 3"}]]`}})
			if err != nil || res.IsError {
				t.Fatalf("debug: %v %+v", err, res)
			}
			var fr []fakeapi.FunctionResponse
			for _, r := range h.api.Requests() {
				if r.Method == fakeapi.MethodStream && strings.Contains(r.Prompt, "the query fails") {
					fr = append(fr, r.FunctionResponses...)
				}
			}
			if want := `query {\"sql\":\"select 3\"}`; len(fr) != 1 || !strings.Contains(string(fr[0].Response), want) {
				t.Errorf("function responses %s, want the tool's result %q", fmtResponses(fr), want)
			}
			if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "mcp_db_query returned") || !strings.Contains(text, "## Metadata\n- tool: debug") {
				t.Errorf("result %q", text)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 1 || !strings.Contains(asked[0], "query") {
				t.Errorf("asked %q, want once about query", asked)
			}
		})
	}
}

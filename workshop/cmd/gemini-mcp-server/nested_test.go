package main

import (
	"context"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/app"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// TestNestedServesNoTools: started with the marker its own Gemini CLI
// children carry, the server offers no tools and runs no CLI, unless the
// operator allows it with --allow-nested.
func TestNestedServesNoTools(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		args  []string
		tools int
	}{{"nested", nil, 0}, {"allowed", []string{"--allow-nested"}, 12}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			e.vars = append(e.vars, app.NestedEnv+"=1", "GEMINI_MCP_BACKEND=warm")
			cs := connect(t, e.command(c.args...))
			ctx := context.Background()
			n := 0
			if cs.InitializeResult().Capabilities.Tools != nil {
				tools, err := cs.ListTools(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				n = len(tools.Tools)
			}
			if n != c.tools {
				t.Fatalf("%d tools, want %d", n, c.tools)
			}
			if c.tools == 0 {
				res, err := cs.ListResources(ctx, nil)
				if err != nil || len(res.Resources) != 1 {
					t.Fatalf("resources: %v %v", res, err)
				}
				cs.Close()
				if inv, _ := geminitest.ReadLog(e.log); len(inv) != 0 {
					t.Fatalf("the nested server ran the CLI: %+v", inv)
				}
			}
		})
	}
}

package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/mcptest"
)

// testHost is an in-process backend.ToolHost whose tools are those of a
// real go-sdk server, reached over the SDK's in-memory transport: the
// results Gemini gets are real MCP results, decoded by the SDK's client.
// Its server is named "demo"; its tools are declared as mcp_demo_<tool>.
type testHost struct {
	cs      *mcp.ClientSession
	trusted bool

	// started receives a tool's name when its handler starts; cancelled
	// when the handler of "block" sees its context end.
	started   chan string
	cancelled chan struct{}

	mu    sync.Mutex
	calls []string // the tools called, in order
	meet  chan struct{}
}

// demoPNG is the data of the "image" tool's picture (any bytes do).
var demoPNG = []byte{0x89, 'P', 'N', 'G', 1, 2, 3}

func newTestHost(t *testing.T, trusted bool) *testHost {
	t.Helper()
	h := &testHost{trusted: trusted, started: make(chan string, 16), cancelled: make(chan struct{}, 1), meet: make(chan struct{})}
	s := mcp.NewServer(&mcp.Implementation{Name: "demo", Version: "1"}, nil)
	add := func(name string, fn func(ctx context.Context, args map[string]any) (*mcp.CallToolResult, error)) {
		s.AddTool(&mcp.Tool{Name: name, Description: "the " + name + " tool", InputSchema: map[string]any{"type": "object"}},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				var args map[string]any
				if len(req.Params.Arguments) > 0 {
					if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
						return nil, err
					}
				}
				h.mu.Lock()
				h.calls = append(h.calls, name)
				h.mu.Unlock()
				h.started <- name
				return fn(ctx, args)
			})
	}
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	add("echo", func(_ context.Context, args map[string]any) (*mcp.CallToolResult, error) {
		return text(fmt.Sprint(args["text"])), nil
	})
	add("fail", func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		r := text("the disk is full")
		r.IsError = true
		return r, nil
	})
	add("media", func(context.Context, map[string]any) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.ImageContent{Data: demoPNG, MIMEType: "image/png"},
			&mcp.ResourceLink{URI: "file:///r.txt", Name: "r"},
		}}, nil
	})
	// meet returns once two calls of it run at the same time: two calls
	// made one after the other never return (the test's deadline ends
	// them).
	add("meet", func(ctx context.Context, _ map[string]any) (*mcp.CallToolResult, error) {
		select {
		case h.meet <- struct{}{}:
		case <-h.meet:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return text("met"), nil
	})
	add("block", func(ctx context.Context, _ map[string]any) (*mcp.CallToolResult, error) {
		<-ctx.Done()
		h.cancelled <- struct{}{}
		return nil, ctx.Err()
	})

	h.cs = mcptest.Connect(t, s, &mcptest.Options{Client: &mcp.Implementation{Name: "host", Version: "1"}})
	return h
}

func (h *testHost) Tools() []backend.HostTool {
	var out []backend.HostTool
	for _, name := range []string{"echo", "fail", "media", "meet", "block", "gone"} {
		out = append(out, backend.HostTool{Name: "mcp_demo_" + name, Server: "demo", Tool: name,
			Description: "the " + name + " tool", Schema: map[string]any{"type": "object"}, Trusted: h.trusted})
	}
	return out
}

func (h *testHost) Call(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
	tool, ok := map[string]string{"mcp_demo_echo": "echo", "mcp_demo_fail": "fail", "mcp_demo_media": "media",
		"mcp_demo_meet": "meet", "mcp_demo_block": "block"}[name]
	if !ok {
		// "gone" is declared but its server went away.
		return nil, errors.New("server demo is not connected")
	}
	return h.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
}

func (h *testHost) called() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.calls...)
}

// guard is a context that ends a test that would otherwise hang: a last
// resort, never waited on.
func guard(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

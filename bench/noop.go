package main

import (
	"context"
	"net"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// noopArgs are the chat tool's arguments, as our server takes them.
type noopArgs struct {
	Prompt string `json:"prompt"`
	Model  string `json:"model,omitempty"`
}

// startNoopServer serves, on a free port of 127.0.0.1, a go-sdk MCP server
// over Streamable HTTP (stateful, as ours) whose chat tool does nothing but
// echo its prompt: what the SDK and HTTP alone cost, the ceiling of our
// server's calls per second on the same machine. It runs inside the bench
// process (our server runs in its own). stop closes it.
func startNoopServer() (endpoint string, stop func(), err error) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "noop", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "chat", Description: "echoes the prompt"}, func(_ context.Context, _ *mcp.CallToolRequest, a noopArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Prompt}}}, nil, nil
	})
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	hs := &http.Server{Handler: mux}
	go hs.Serve(ln)
	return "http://" + ln.Addr().String() + "/mcp", func() { hs.Close() }, nil
}

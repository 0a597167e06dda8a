// Command noopserver is the bench's no-op go-sdk MCP server over stdio: a
// chat tool that does nothing but echo its prompt, served on stdin and
// stdout as our server is. Its cold start and memory are what the SDK,
// the Go runtime and the stdio transport alone cost on the machine, the
// limit the bench measures our server against in the same run.
//
//	go build -o noopserver ./bench/noopserver
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// args are the chat tool's arguments, as our server takes them.
type args struct {
	Prompt string `json:"prompt"`
	Model  string `json:"model,omitempty"`
}

func main() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "noop", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "chat", Description: "echoes the prompt"}, func(_ context.Context, _ *mcp.CallToolRequest, a args) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Prompt}}}, nil, nil
	})
	// Run returns nil when the client closes stdin.
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "noopserver:", err)
		os.Exit(1)
	}
}

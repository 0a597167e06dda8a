// Command mcpdown is a downstream MCP server for the MCP host's tests: a
// go-sdk server over stdio, SSE or Streamable HTTP whose tools echo their
// arguments, plus tools that misbehave on purpose. Flags choose the
// transport and the tools; for HTTP it prints "url <endpoint>" on stdout
// once it listens. Diagnostics go to stderr. It ends itself after
// -self-timeout so that a broken test leaves nothing behind.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Lines on stderr that tests wait for.
const (
	hangingLine = "mcpdown: hanging in tool"
	childLine   = "mcpdown: child pid"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "mcpdown:", err)
		os.Exit(2)
	}
}

type names []string

func (n *names) String() string     { return strings.Join(*n, ",") }
func (n *names) Set(v string) error { *n = append(*n, v); return nil }

func run() error {
	var tools names
	transport := flag.String("transport", "stdio", "stdio, sse or http")
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on for sse and http")
	name := flag.String("name", "mcpdown", "the server's name in initialize")
	flag.Var(&tools, "tool", "a tool that answers with its arguments (repeatable)")
	hang := flag.String("hang", "", "a tool that never answers (until cancelled)")
	crash := flag.String("crash", "", "a tool that ends the server mid-call")
	grow := flag.String("grow", "", "a tool that adds a tool named added_N and announces the change")
	refTool := flag.String("ref-tool", "", "a tool whose input schema uses $defs and $ref")
	meet := flag.String("meet", "", "a tool whose calls wait until -meet-n of them run at once")
	meetN := flag.Int("meet-n", 2, "how many calls of the -meet tool must run at once")
	noInit := flag.Bool("no-initialize", false, "never answer initialize (a hanging server)")
	child := flag.Bool("child", false, "start a child process that stays until killed")
	pidDir := flag.String("pid-dir", "", "write a file named after each process's pid here")
	sleep := flag.Bool("sleep", false, "only sleep (the child of -child)")
	selfTimeout := flag.Duration("self-timeout", 2*time.Minute, "exit after this long")
	flag.Parse()

	time.AfterFunc(*selfTimeout, func() {
		fmt.Fprintln(os.Stderr, "mcpdown: self-timeout")
		os.Exit(3)
	})
	if *pidDir != "" {
		if err := os.WriteFile(filepath.Join(*pidDir, "pid-"+strconv.Itoa(os.Getpid())), nil, 0o600); err != nil {
			return err
		}
	}
	if *sleep {
		select {}
	}
	if *child {
		self, err := os.Executable()
		if err != nil {
			return err
		}
		args := []string{"-sleep", "-self-timeout", selfTimeout.String()}
		if *pidDir != "" {
			args = append(args, "-pid-dir", *pidDir)
		}
		cmd := exec.Command(self, args...)
		if err := cmd.Start(); err != nil {
			return err
		}
		fmt.Fprintln(os.Stderr, childLine, cmd.Process.Pid)
		go cmd.Wait() //nolint:errcheck // the child's end is of no interest.
	}
	if *noInit {
		if *transport == "stdio" {
			fmt.Fprintln(os.Stderr, "mcpdown: not answering initialize")
			select {}
		}
		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			return err
		}
		fmt.Printf("url http://%s/\n", ln.Addr())
		return http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
		}))
	}

	server := mcp.NewServer(&mcp.Implementation{Name: *name, Version: "1.0.0"}, nil)
	echo := func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, _ := json.Marshal(req.Params.Arguments)
		text := req.Params.Name + " " + string(args)
		if req.Params.Arguments == nil || string(args) == "null" {
			text = req.Params.Name + " {}"
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
	}
	schema := map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}
	for _, t := range tools {
		server.AddTool(&mcp.Tool{Name: t, Description: "echoes its arguments", InputSchema: schema}, echo)
	}
	if *hang != "" {
		server.AddTool(&mcp.Tool{Name: *hang, Description: "never answers", InputSchema: schema}, func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, hangingLine)
			<-ctx.Done()
			fmt.Fprintln(os.Stderr, "mcpdown: hanging tool cancelled")
			return nil, ctx.Err()
		})
	}
	if *crash != "" {
		server.AddTool(&mcp.Tool{Name: *crash, Description: "ends the server", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintln(os.Stderr, "mcpdown: crashing")
			os.Exit(4)
			return nil, nil
		})
	}
	if *grow != "" {
		var n atomic.Int32
		server.AddTool(&mcp.Tool{Name: *grow, Description: "adds a tool", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			added := fmt.Sprintf("added_%d", n.Add(1))
			// AddTool sends notifications/tools/list_changed to the client.
			server.AddTool(&mcp.Tool{Name: added, Description: "added later", InputSchema: schema}, echo)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: added}}}, nil
		})
	}
	if *refTool != "" {
		refSchema := map[string]any{
			"type":  "object",
			"$defs": map[string]any{"Point": map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "number"}}}},
			"properties": map[string]any{
				"at": map[string]any{"$ref": "#/$defs/Point"},
			},
		}
		server.AddTool(&mcp.Tool{Name: *refTool, Description: "takes a point", InputSchema: refSchema}, echo)
	}

	if *meet != "" {
		// Each call waits for the others: the calls answer only if they
		// all run at the same time, which proves a client runs them in
		// parallel. A call cancelled while it waits does not count.
		var mu sync.Mutex
		waiting := 0
		met := make(chan struct{})
		var meetOnce sync.Once
		server.AddTool(&mcp.Tool{Name: *meet, Description: "waits for the other calls", InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			waiting++
			fmt.Fprintf(os.Stderr, "mcpdown: meeting %d of %d\n", waiting, *meetN)
			if waiting >= *meetN {
				meetOnce.Do(func() { close(met) })
			}
			mu.Unlock()
			select {
			case <-met:
			case <-ctx.Done():
				mu.Lock()
				waiting--
				mu.Unlock()
				return nil, ctx.Err()
			}
			args, _ := json.Marshal(req.Params.Arguments)
			text := fmt.Sprintf("met %d %s", *meetN, args)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, nil
		})
	}

	switch *transport {
	case "stdio":
		err := server.Run(context.Background(), &mcp.StdioTransport{})
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
		fmt.Fprintln(os.Stderr, "mcpdown: stdin closed")
		return nil
	case "sse", "http":
		ln, err := net.Listen("tcp", *addr)
		if err != nil {
			return err
		}
		var h http.Handler
		if *transport == "sse" {
			h = mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return server }, nil)
		} else {
			h = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil)
		}
		fmt.Printf("url http://%s/\n", ln.Addr())
		return http.Serve(ln, h)
	default:
		return fmt.Errorf("unknown transport %q", *transport)
	}
}

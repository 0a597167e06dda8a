package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// noopArgs are the chat tool's arguments, as our server takes them.
type noopArgs struct {
	Prompt string `json:"prompt"`
	Model  string `json:"model,omitempty"`
}

// noopServerEnv, set to 1 in its environment, makes the bench's own
// executable (or its test binary) the no-op server instead (see
// serveNoopIfAsked).
const noopServerEnv = "GEMINI_MCP_BENCH_NOOP_SERVER"

// serveNoopIfAsked serves the no-op server when the environment asks for
// it, and then exits: on a free port of 127.0.0.1, a go-sdk MCP server over
// Streamable HTTP (stateful, as ours) whose chat tool does nothing but
// echo its prompt. It writes its endpoint as the first line of stdout and
// serves until stdin closes, so that it never outlives the bench.
func serveNoopIfAsked() {
	if os.Getenv(noopServerEnv) != "1" {
		return
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "noop", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "chat", Description: "echoes the prompt"}, func(_ context.Context, _ *mcp.CallToolRequest, a noopArgs) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: a.Prompt}}}, nil, nil
	})
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "no-op server:", err)
		os.Exit(1)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	hs := &http.Server{Handler: mux}
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		hs.Close()
	}()
	fmt.Println("http://" + ln.Addr().String() + "/mcp")
	if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "no-op server:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// startNoopServer starts the no-op go-sdk server (serveNoopIfAsked) in a
// process of its own, as ours runs, so that its CPU time is read from
// /proc the same way: what the SDK and HTTP alone cost, the ceiling of our
// server's calls per second on the same machine. stop ends it.
func startNoopServer(ctx context.Context) (endpoint string, pid int, stop func() error, err error) {
	exe, err := os.Executable()
	if err != nil {
		return "", 0, nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), noopServerEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", 0, nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", 0, nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", 0, nil, err
	}
	exited := make(chan error, 1)
	stop = func() error {
		stdin.Close()
		select {
		case err := <-exited:
			return err
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			return errors.New("the no-op server did not exit within 10 s of its stdin closing; killed")
		}
	}
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- strings.TrimSpace(l)
		_, _ = io.Copy(io.Discard, stdout)
		exited <- cmd.Wait()
	}()
	select {
	case l := <-line:
		if !strings.HasPrefix(l, "http://") {
			stop()
			return "", 0, nil, fmt.Errorf("the no-op server did not start (its first line: %q)", l)
		}
		return l, cmd.Process.Pid, stop, nil
	case <-ctx.Done():
		stop()
		return "", 0, nil, ctx.Err()
	case <-time.After(30 * time.Second):
		stop()
		return "", 0, nil, errors.New("the no-op server did not name its address within 30 s")
	}
}

// Command mcpdown is a downstream MCP server for the MCP host's tests: a
// go-sdk server over stdio, SSE or Streamable HTTP whose tools echo their
// arguments, plus tools that misbehave on purpose. Flags choose the
// transport and the tools; for HTTP it prints "url <endpoint>" on stdout
// once it listens. Diagnostics go to stderr. It ends itself after
// -self-timeout so that a broken test leaves nothing behind.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
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

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/oauth"
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
	huge := flag.String("huge", "", "a tool whose result is one text block of -huge-bytes bytes")
	hugeBytes := flag.Int("huge-bytes", 50<<20, "the size of the -huge tool's text")
	endless := flag.String("endless", "", "a tool whose answer never ends: an HTTP body, or a line on stdio")
	explode := flag.String("explode", "", "a tool whose input schema has -explode-levels $defs, each referencing the next twice")
	explodeLevels := flag.Int("explode-levels", 20, "how many $defs levels the -explode tool's schema has")
	endlessPages := flag.Bool("endless-pages", false, "tools/list always answers with one more tool and a nextCursor (http only)")
	envFile := flag.String("env-file", "", "write this process's environment here, one variable a line")
	clientFile := flag.String("client-file", "", "write the method, client name and version of each initialize or server/discover here, one a line")
	echoEnv := flag.String("echo-env", "", "a tool named env that answers with this variable's value")
	noInit := flag.Bool("no-initialize", false, "never answer initialize (a hanging server)")
	child := flag.Bool("child", false, "start a child process that stays until killed")
	pidDir := flag.String("pid-dir", "", "write a file named after each process's pid here")
	sleep := flag.Bool("sleep", false, "only sleep (the child of -child)")
	selfTimeout := flag.Duration("self-timeout", 2*time.Minute, "exit after this long")
	authIssuer := flag.String("auth-issuer", "", "sse and http: require OAuth access tokens (JWTs) of this issuer, for the printed URL as the resource, with the scope gemini")
	authLog := flag.String("auth-log", "", "with -auth-issuer, append each accepted request's subject here, one a line")
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
	if *envFile != "" {
		if err := os.WriteFile(*envFile, []byte(strings.Join(os.Environ(), "\n")+"\n"), 0o600); err != nil {
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
	if *clientFile != "" {
		// The client of initialize (older protocols) or server/discover
		// (stateless ones, whose client names itself in _meta), written
		// before the request is answered, so a client that saw the answer
		// finds the line.
		server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				var info *mcp.Implementation
				switch p := req.GetParams().(type) {
				case *mcp.InitializeParams:
					info = p.ClientInfo
				case *mcp.DiscoverParams:
					b, _ := json.Marshal(p.GetMeta()[mcp.MetaKeyClientInfo])
					json.Unmarshal(b, &info) //nolint:errcheck // a missing or odd clientInfo records nothing.
				}
				if info != nil {
					if f, err := os.OpenFile(*clientFile, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
						fmt.Fprintln(f, method, info.Name, info.Version)
						f.Close()
					}
				}
				return next(ctx, method, req)
			}
		})
	}
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
	if *echoEnv != "" {
		server.AddTool(&mcp.Tool{Name: "env", Description: "answers with a variable of its environment", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: *echoEnv + "=" + os.Getenv(*echoEnv)}}}, nil
		})
	}
	if *huge != "" {
		server.AddTool(&mcp.Tool{Name: *huge, Description: "answers with a huge text", InputSchema: schema}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			fmt.Fprintf(os.Stderr, "mcpdown: sending %d bytes\n", *hugeBytes)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: hugeText(*hugeBytes)}}}, nil
		})
	}
	if *explode != "" {
		server.AddTool(&mcp.Tool{Name: *explode, Description: "a schema that grows when inlined", InputSchema: explodingSchema(*explodeLevels)}, echo)
	}
	if *endless != "" {
		// Over HTTP its calls are answered by hostile; on stdio the tool
		// writes one line that never ends where its answer would go.
		server.AddTool(&mcp.Tool{Name: *endless, Description: "never finishes its answer", InputSchema: schema}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if *transport != "stdio" {
				return echo(ctx, req)
			}
			fmt.Fprintln(os.Stderr, "mcpdown: sending an endless body")
			os.Stdout.WriteString(`{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"`)
			chunk := bytes.Repeat([]byte("x"), 64<<10)
			var sent int64
			for {
				if _, err := os.Stdout.Write(chunk); err != nil {
					fmt.Fprintf(os.Stderr, "mcpdown: endless body cut after %d bytes\n", sent)
					os.Exit(5)
				}
				sent += int64(len(chunk))
			}
		})
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
		h = hostile(h, *endless, *endlessPages)
		resource := fmt.Sprintf("http://%s/", ln.Addr())
		if *authIssuer != "" {
			if h, err = protect(h, *authIssuer, resource, *authLog); err != nil {
				return err
			}
		}
		fmt.Printf("url %s\n", resource)
		return http.Serve(ln, h)
	default:
		return fmt.Errorf("unknown transport %q", *transport)
	}
}

// protect lets only requests with an access token of issuer for resource
// through, with the scope gemini, and serves the protected-resource
// metadata (RFC 9728) that names the issuer.
func protect(next http.Handler, issuer, resource, logPath string) (http.Handler, error) {
	v, err := oauth.New(oauth.Options{Issuers: []string{issuer}, Audience: resource})
	if err != nil {
		return nil, err
	}
	meta := resource + ".well-known/oauth-protected-resource"
	var mu sync.Mutex
	logged := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ti := auth.TokenInfoFromContext(r.Context()); ti != nil && logPath != "" {
			mu.Lock()
			if f, err := os.OpenFile(logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600); err == nil {
				fmt.Fprintln(f, ti.UserID)
				f.Close()
			}
			mu.Unlock()
		}
		next.ServeHTTP(w, r)
	})
	mux := http.NewServeMux()
	mux.Handle("/.well-known/oauth-protected-resource", auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource: resource, AuthorizationServers: []string{issuer}, ScopesSupported: []string{"gemini"},
	}))
	mux.Handle("/", auth.RequireBearerToken(v.Verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: meta, Scopes: []string{"gemini"}})(logged))
	return mux, nil
}

// hugeText is n bytes of text: a head and a tail that tests look for,
// numbered lines between.
func hugeText(n int) string {
	const head, tail = "HUGE-HEAD\n", "\nHUGE-TAIL"
	var b strings.Builder
	b.Grow(n)
	b.WriteString(head)
	for i := 0; b.Len() < n-len(tail); i++ {
		line := fmt.Sprintf("line %d of a huge result\n", i)
		if b.Len()+len(line) > n-len(tail) {
			line = strings.Repeat("x", n-len(tail)-b.Len())
		}
		b.WriteString(line)
	}
	b.WriteString(tail)
	return b.String()
}

// explodingSchema is a small schema that grows as 2^levels when its
// references are inlined: each level's two properties both point at the
// next level.
func explodingSchema(levels int) map[string]any {
	defs := map[string]any{}
	for i := range levels {
		next := map[string]any{"$ref": fmt.Sprintf("#/$defs/L%d", i+1)}
		defs[fmt.Sprintf("L%d", i)] = map[string]any{"type": "object", "properties": map[string]any{"a": next, "b": next}}
	}
	defs[fmt.Sprintf("L%d", levels)] = map[string]any{"type": "string"}
	return map[string]any{"type": "object", "$defs": defs, "properties": map[string]any{"root": map[string]any{"$ref": "#/$defs/L0"}}}
}

// hostile answers some Streamable HTTP requests itself, as a broken or
// hostile server would: a tools/call of endlessTool with a body that
// never ends, and with endlessPages every tools/list with one more tool
// and a cursor to another page.
func hostile(next http.Handler, endlessTool string, endlessPages bool) http.Handler {
	var pages atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || (endlessTool == "" && !endlessPages) {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		switch {
		case endlessTool != "" && msg.Method == "tools/call" && msg.Params.Name == endlessTool:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, msg.ID)
			fmt.Fprintln(os.Stderr, "mcpdown: sending an endless body")
			chunk := bytes.Repeat([]byte("x"), 64<<10)
			var sent int64
			for {
				if _, err := w.Write(chunk); err != nil {
					fmt.Fprintf(os.Stderr, "mcpdown: endless body cut after %d bytes\n", sent)
					return
				}
				sent += int64(len(chunk))
			}
		case endlessPages && msg.Method == "tools/list":
			n := pages.Add(1)
			fmt.Fprintf(os.Stderr, "mcpdown: tools/list page %d\n", n)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"page_%d","inputSchema":{"type":"object"}}],"nextCursor":"c%d"}}`, msg.ID, n, n)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

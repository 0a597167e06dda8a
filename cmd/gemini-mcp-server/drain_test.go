package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
)

// readyz returns /readyz's status code and JSON body.
func readyz(t *testing.T, addr string) (int, map[string]string) {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/readyz")
	if err != nil {
		t.Fatalf("GET /readyz: %v", err)
	}
	defer resp.Body.Close()
	var body map[string]string
	data, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(data, &body); err != nil || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("/readyz: %s %q: %v", resp.Status, data, err)
	}
	return resp.StatusCode, body
}

// gatedAPI is the fake Gemini API behind a gate: each request announces
// itself on arrived and waits for release before it is passed on.
func gatedAPI(t *testing.T) (base string, arrived <-chan struct{}, release func()) {
	fake := fakeapi.New()
	t.Cleanup(fake.Close)
	target, err := url.Parse(fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	arr, rel := make(chan struct{}, 16), make(chan struct{})
	gate := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			arr <- struct{}{}
			select {
			case <-rel:
			case <-r.Context().Done():
				return
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(gate.Close)
	var once sync.Once
	return gate.URL, arr, func() { once.Do(func() { close(rel) }) }
}

// TestHTTPDrainFinishesCallInFlight stops a server with SIGTERM while a
// call waits for the Gemini API: /readyz answers 503 (draining) at once,
// a new session is refused with a retryable 503 and a new call of an open
// session with a retryable error, the call in flight finishes with its
// answer, and the server then exits 0.
func TestHTTPDrainFinishesCallInFlight(t *testing.T) {
	e := newEnv(t)
	api, arrived, release := gatedAPI(t)
	defer release()
	e.vars = append(e.vars, "GEMINI_API_KEY=k", "GOOGLE_GEMINI_BASE_URL="+api, "GEMINI_MCP_DRAIN_TIMEOUT=2m")
	cmd := e.command("--http", "127.0.0.1:0", "--backend", "api")
	addr, stop, log := startHTTPCmd(t, cmd)

	if code, body := readyz(t, addr); code != http.StatusOK || body["status"] != "ready" {
		t.Fatalf("/readyz of a serving server: %d %v", code, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "drain", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "finish me while draining"}})
		done <- result{res, err}
	}()
	select {
	case <-arrived:
	case <-ctx.Done():
		t.Fatal("the call never reached the Gemini API")
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if !log.WaitFor(ctx, "draining: refusing new sessions and calls") {
		t.Fatal("the server did not start draining")
	}
	if code, body := readyz(t, addr); code != http.StatusServiceUnavailable || body["status"] != "draining" {
		t.Fatalf("/readyz while draining: %d %v", code, body)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"late","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	msg, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(msg), "retry") {
		t.Fatalf("a new session while draining: %s, Retry-After %q, %s", resp.Status, resp.Header.Get("Retry-After"), msg)
	}
	// A new call of the open session is refused too, retryably.
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "too late"}}); err == nil || !strings.Contains(err.Error(), "retry") {
		t.Fatalf("a new call while draining: %+v, %v", res, err)
	}
	select {
	case r := <-done:
		t.Fatalf("the call ended before the Gemini API answered: %+v, %v", r.res, r.err)
	default:
	}

	release()
	r := <-done
	if r.err != nil || r.res.IsError || len(r.res.Content) == 0 {
		t.Fatalf("the call in flight while draining: %+v, %v", r.res, r.err)
	}
	if text := r.res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "finish me while draining") {
		t.Fatalf("the call's answer: %q", text)
	}
	cs.Close()
	if err := stop(); err != nil {
		t.Fatalf("exit after draining: %v", err)
	}
	if !strings.Contains(log.String(), "drained: no call in flight") {
		t.Fatalf("no drained line in the log:\n%s", log.String())
	}
}

// TestReadyzStoreDown: a server whose Redis is down is not ready, and
// says why; it is ready again once Redis is back. /healthz stays 200.
func TestReadyzStoreDown(t *testing.T) {
	e := newEnv(t)
	redis := redistest.Start(t)
	addr, _, log := startHTTPCmd(t, e.command("--http", "127.0.0.1:0", "--store", redis.URL(0)))
	if code, body := readyz(t, addr); code != http.StatusOK || body["status"] != "ready" {
		t.Fatalf("/readyz: %d %v", code, body)
	}
	redis.Kill()
	code, body := readyz(t, addr)
	if code != http.StatusServiceUnavailable || body["status"] != "unready" || !strings.Contains(body["reason"], "session store") {
		t.Fatalf("/readyz with Redis down: %d %v", code, body)
	}
	// /readyz answers anyone: the store's address is for the log only.
	if strings.Contains(body["reason"], redis.Addr()) {
		t.Fatalf("/readyz names the store's address to an unauthenticated caller: %v", body)
	}
	if !log.WaitFor(ctx30(t), redis.Addr()) {
		t.Fatalf("the log does not say which store failed: \n%s", log.String())
	}
	if resp, err := http.Get("http://" + addr + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz with Redis down: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	redis.Restart()
	if code, body := readyz(t, addr); code != http.StatusOK {
		t.Fatalf("/readyz with Redis back: %d %v", code, body)
	}
}

// TestReadyzNoGemini: a server of a CLI backend whose gemini executable
// is missing is not ready, and says why.
func TestReadyzNoGemini(t *testing.T) {
	e := newEnv(t)
	addr, _, log := startHTTPCmd(t, e.command("--http", "127.0.0.1:0", "--gemini", "/nonexistent/gemini"))
	code, body := readyz(t, addr)
	if code != http.StatusServiceUnavailable || !strings.Contains(body["reason"], "backend") || strings.Contains(body["reason"], "/nonexistent/gemini") {
		t.Fatalf("/readyz without gemini: %d %v", code, body)
	}
	if !log.WaitFor(ctx30(t), "/nonexistent/gemini") {
		t.Fatalf("the log does not say what the backend lacks: \n%s", log.String())
	}
}

// ctx30 bounds a wait for a log line: 30 s, against a hang.
func ctx30(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

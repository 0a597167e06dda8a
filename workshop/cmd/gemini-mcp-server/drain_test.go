package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
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
		// Full duplex: a half-duplex server closes the request's body when
		// the answer's headers go out, which can cut the proxy's last read
		// of it and so its connection upstream (golang/go#40747).
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			t.Errorf("the gate: %v", err)
		}
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

// TestSecondSignalCutsDrainShort: a second SIGTERM or SIGINT while an
// HTTP server drains (in the drain delay, or while it waits for the calls
// in flight) ends the drain at once: the call in flight, whose CLI and its
// child ignore SIGTERM, is cancelled and answered, the CLI and its child
// are gone, and the server exits 0 within seconds, not at the end of the
// drain's minutes.
func TestSecondSignalCutsDrainShort(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("signals and /proc")
	}
	for _, tc := range []struct {
		name, delay, waitFor string
		second               os.Signal
	}{
		{"in the delay", "10m", "draining: /readyz answers 503", syscall.SIGTERM},
		{"waiting for calls", "0", "draining: refusing new sessions and calls; waiting for the calls in flight", syscall.SIGTERM},
		{"interrupt", "0", "draining: refusing new sessions and calls; waiting for the calls in flight", os.Interrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.vars = append(e.vars, "GEMINI_MCP_DRAIN_DELAY="+tc.delay, "GEMINI_MCP_DRAIN_TIMEOUT=10m")
			cmd := e.command("--http", "127.0.0.1:0")
			addr, _, log := startHTTPCmd(t, cmd)
			ctx := ctx30(t)
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "second-signal", Version: "1"}, nil).Connect(ctx,
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
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "[[ignoreterm]] [[child]]"}})
				done <- result{res, err}
			}()
			inv := geminitest.WaitInvocation(t, e.log, 10*time.Second, geminitest.HasChild)

			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if !log.WaitFor(ctx, tc.waitFor) {
				t.Fatal("the server did not start draining")
			}
			start := time.Now()
			if err := cmd.Process.Signal(tc.second); err != nil {
				t.Fatal(err)
			}
			// Read before Wait, which closes the pipe the log comes on.
			if !log.WaitFor(ctx, "a second signal: the drain ends now") {
				t.Error("the log does not say the drain was cut short")
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case err := <-exited:
				if err != nil {
					t.Fatalf("exit after the second signal: %v", err)
				}
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-exited
				t.Fatal("still running 10 s after the second signal: it did not cut the drain short")
			}
			t.Logf("exited %v after the second signal", time.Since(start).Round(time.Millisecond))
			for _, pid := range []int{inv.Pid, inv.ChildPid} {
				if geminitest.Alive(pid) {
					t.Errorf("pid %d (the CLI or its child) outlived the server", pid)
				}
			}
			select {
			case r := <-done:
				// Answered as cancelled: an error result, or a JSON-RPC
				// error; never an answer.
				if r.err == nil && !r.res.IsError {
					t.Errorf("the call in flight answered %+v, want it cancelled", r.res.Content)
				}
			case <-guardCtx(t).Done():
				t.Error("the call in flight got no answer")
			}
		})
	}
}

// TestOneCtrlCDrains: one Ctrl-C reaches the server twice when the npm
// launcher runs it (the terminal signals both, and the launcher passes its
// signal on): two SIGINTs back to back are one, and the server drains to
// the end of --drain-timeout rather than stopping at once.
func TestOneCtrlCDrains(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("signals")
	}
	t.Parallel()
	e := newEnv(t)
	e.vars = append(e.vars, "GEMINI_MCP_DRAIN_DELAY=0", "GEMINI_MCP_DRAIN_TIMEOUT=2s")
	cmd := e.command("--http", "127.0.0.1:0")
	addr, _, log := startHTTPCmd(t, cmd)
	ctx := ctx30(t)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "ctrl-c", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	go cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "[[hang]]"}})
	geminitest.WaitInvocation(t, e.log, 10*time.Second, func(geminitest.Invocation) bool { return true })
	cmd.Process.Signal(os.Interrupt)
	cmd.Process.Signal(os.Interrupt)
	// Read before Wait, which closes the pipe the log comes on.
	if !log.WaitFor(ctx, "calls still running at the end of the drain timeout") {
		t.Fatal("the server did not drain to the end of the timeout")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
	if out := log.String(); strings.Contains(out, "a second signal") || !strings.Contains(out, "calls still running at the end of the drain timeout") {
		t.Fatalf("one Ctrl-C did not drain to the end of the timeout:\n%s", out)
	}
}

package server

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/cli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/tools"
)

// TestHTTPShutdownAnswersCalls stops the server while a call runs, on
// each transport: the call is cancelled, its client gets the "cancelled"
// answer (on SSE it travels on the client's stream, not on the POST, and
// must be written before the stream ends), and the server returns. The
// clients are raw: the SDK's clients may report the end of a stream before
// a message that arrived just ahead of it.
func TestHTTPShutdownAnswersCalls(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"streamable", "sse"} {
		t.Run(transport, func(t *testing.T) {
			h := newHarness(t, options{noConnect: true})
			store := memstore.New(session.Options{})
			t.Cleanup(func() { store.Close() })
			life, endLife := context.WithCancel(context.Background())
			defer endLife()
			runner := cli.NewRunner(geminicli.Options{Gemini: fakeGemini, Env: h.env, Timeout: time.Minute}, nil)
			srv := New("test", Families{Chat: &tools.Deps{Conv: conversation.New(conversation.Options{Backend: runner, Store: store, DefaultCwd: h.home, Lifetime: life}), MaxPromptBytes: 1 << 20}}, nil)
			inflight, requests := NewInflight(), NewRequestContexts()
			handler := NewHTTPHandler(srv, HTTPOptions{Inflight: inflight, Requests: requests})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			served := make(chan error, 1)
			go func() {
				served <- ServeHTTP(ctx, ln, handler, ServeOptions{Grace: 10 * time.Second, EndCalls: endLife, Inflight: inflight, Server: srv})
			}()
			base := "http://" + ln.Addr().String()
			const call = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"chat","arguments":{"prompt":"[[hang]]"}}}`
			var answer <-chan string
			if transport == "sse" {
				answer = sseCall(t, base, call)
			} else {
				answer = streamableCall(t, base, call)
			}
			h.firstCLIPid(t)
			stop()
			if got := <-answer; !strings.Contains(got, `"id":2`) || !strings.Contains(got, `"isError":true`) || !strings.Contains(got, "cancelled") {
				t.Fatalf("the client got no cancelled answer: %q", got)
			}
			if err := <-served; err != nil {
				t.Fatalf("ServeHTTP: %v", err)
			}
		})
	}
}

func postJSON(t *testing.T, url, session, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// streamableCall opens a session, sends call and returns what comes back
// on its POST until the server ends it.
func streamableCall(t *testing.T, base, call string) <-chan string {
	resp := postJSON(t, base+PathMCP, "", initialize)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	session := resp.Header.Get("Mcp-Session-Id")
	postJSON(t, base+PathMCP, session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()
	out := make(chan string, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, base+PathMCP, strings.NewReader(call))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- err.Error()
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		out <- string(body)
	}()
	return out
}

// sseCall opens an SSE session, sends call and returns everything the
// stream carried until the server ended it.
func sseCall(t *testing.T, base, call string) <-chan string {
	req, _ := http.NewRequest(http.MethodGet, base+PathSSE, nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(resp.Body)
	endpoint := ""
	for endpoint == "" {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("SSE stream: %v", err)
		}
		if data, ok := strings.CutPrefix(strings.TrimSpace(line), "data: "); ok {
			endpoint = data
		}
	}
	if !strings.HasPrefix(endpoint, "http") {
		endpoint = base + endpoint
	}
	out := make(chan string, 1)
	go func() {
		defer resp.Body.Close()
		rest, _ := io.ReadAll(r)
		out <- string(rest)
	}()
	for _, msg := range []string{initialize, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, call} {
		resp := postJSON(t, endpoint, "", msg)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return out
}

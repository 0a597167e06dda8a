package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

const testToken = "test-token-0123456789abcdef"

// httpHarness serves a fake-CLI server over HTTP on 127.0.0.1.
type httpHarness struct {
	*harness
	url string
}

func newHTTPHarness(t *testing.T, o HTTPOptions, opts ...options) *httpHarness {
	t.Helper()
	var ho options
	if len(opts) > 0 {
		ho = opts[0]
	}
	ho.noConnect = true
	h := newHarness(t, ho)
	srv := h.newServer()
	o.Version = "test"
	if o.Requests != nil {
		// Calls end with their HTTP request, as in the binary.
		h.requestContext = o.Requests.Lookup
		srv = h.newServer()
	}
	ts := httptest.NewServer(NewHTTPHandler(srv, o))
	t.Cleanup(ts.Close)
	return &httpHarness{harness: h, url: ts.URL}
}

// bearer adds a token to every request.
type bearer struct {
	token string
	rt    http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.rt.RoundTrip(r)
}

func clientFor(token string) *http.Client {
	if token == "" {
		return http.DefaultClient
	}
	return &http.Client{Transport: bearer{token, http.DefaultTransport}}
}

func (h *httpHarness) connect(t *testing.T, transport, token string, copts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	var tr mcp.Transport
	switch transport {
	case "streamable":
		tr = &mcp.StreamableClientTransport{Endpoint: h.url + PathMCP, HTTPClient: clientFor(token)}
	case "sse":
		tr = &mcp.SSEClientTransport{Endpoint: h.url + PathSSE, HTTPClient: clientFor(token)}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, copts).Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func TestHTTPTransports(t *testing.T) {
	t.Parallel()
	for _, transport := range []string{"streamable", "sse"} {
		t.Run(transport, func(t *testing.T) {
			h := newHTTPHarness(t, HTTPOptions{Tokens: []string{"another-token-abcdefgh", testToken}})
			if _, err := h.connect(t, transport, "", nil); err == nil {
				t.Fatal("connected without a token")
			}
			if _, err := h.connect(t, transport, "wrong-token-0123456789", nil); err == nil {
				t.Fatal("connected with a wrong token")
			}
			// The client's SDK hands notifications to the handler apart
			// from the responses: the test waits for one that says the
			// CLI runs rather than look when the calls have returned.
			running := make(chan struct{})
			var once sync.Once
			cs, err := h.connect(t, transport, testToken, &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
					if strings.HasPrefix(req.Params.Message, "gemini is running (") {
						once.Do(func() { close(running) })
					}
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			params := &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "over http [[sleep:300]]", "model": "gemini-x"}}
			params.SetProgressToken("p1")
			res, err := cs.CallTool(context.Background(), params)
			if err != nil || res.IsError {
				t.Fatalf("chat: %v %+v", err, res)
			}
			id, _ := res.Meta["sessionId"].(string)
			if !session.IsUUID(id) || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "fake-gemini turn=1 model=gemini-x") {
				t.Fatalf("chat result %+v", res)
			}
			res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "chat-reply", Arguments: map[string]any{"prompt": "again", "sessionId": id}})
			if err != nil || res.IsError || res.Meta["sessionId"] != id {
				t.Fatalf("chat-reply: %v %+v", err, res)
			}
			res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "[[exit:41]]"}})
			if err != nil || !res.IsError || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "Error executing gemini: authentication failed") {
				t.Fatalf("failing chat: %v %+v", err, res)
			}
			select {
			case <-running:
			case <-geminitest.Context(t).Done():
				t.Error("no progress over " + transport)
			}
		})
	}
}

func TestHTTPStateless(t *testing.T) {
	t.Parallel()
	h := newHTTPHarness(t, HTTPOptions{Stateless: true})
	cs, err := h.connect(t, "streamable", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "stateless"}})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %+v", err, res)
	}
	id := res.Meta["sessionId"]
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "chat-reply", Arguments: map[string]any{"prompt": "again", "sessionId": id}})
	if err != nil || res.IsError || !strings.HasPrefix(res.Content[0].(*mcp.TextContent).Text, "fake-gemini turn=2 ") {
		t.Fatalf("chat-reply: %v %+v", err, res)
	}
	resp, err := http.Get(h.url + PathSSE)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("/sse in stateless mode: %d", resp.StatusCode)
	}
}

func TestHTTPGuards(t *testing.T) {
	t.Parallel()
	h := newHTTPHarness(t, HTTPOptions{Tokens: []string{testToken}, AllowedOrigins: []string{"https://app.example.com"}, MaxBodyBytes: 64 << 10})
	post := func(origin, token, body string) *http.Response {
		req, _ := http.NewRequest("POST", h.url+PathMCP, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
			// End the session as a client would, so that its goroutines go.
			del, _ := http.NewRequest("DELETE", h.url+PathMCP, nil)
			del.Header.Set("Mcp-Session-Id", id)
			del.Header.Set("Authorization", "Bearer "+testToken)
			if r, err := http.DefaultClient.Do(del); err == nil {
				r.Body.Close()
			}
		}
		return resp
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	if r := post("", "", init); r.StatusCode != 401 || !strings.HasPrefix(r.Header.Get("WWW-Authenticate"), "Bearer ") {
		t.Fatalf("no token: %d %q", r.StatusCode, r.Header.Get("WWW-Authenticate"))
	}
	if r := post("", "nope-nope-nope-nope", init); r.StatusCode != 401 || !strings.Contains(r.Header.Get("WWW-Authenticate"), "invalid_token") {
		t.Fatalf("bad token: %d %q", r.StatusCode, r.Header.Get("WWW-Authenticate"))
	}
	if r := post("https://evil.example", testToken, init); r.StatusCode != 403 {
		t.Fatalf("foreign origin: %d", r.StatusCode)
	}
	for _, origin := range []string{"", "http://localhost:5173", "http://127.0.0.1:6274", "https://app.example.com"} {
		if r := post(origin, testToken, init); r.StatusCode != 200 {
			t.Fatalf("origin %q: %d", origin, r.StatusCode)
		}
	}
	// An oversized body: the server answers 413 once it has read one byte
	// over the cap, and closes the connection without reading the rest.
	// The client sends no more than that byte and waits for the answer:
	// with unread bytes in its socket, the server's close would reset the
	// connection, and the reset could overtake the answer.
	big := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"chat","arguments":{"prompt":"` + strings.Repeat("x", 100<<10) + `"}}}`
	pr, pw := io.Pipe()
	go pw.Write([]byte(big[:64<<10+1])) // ends with the pipe's close below
	req, _ := http.NewRequest("POST", h.url+PathMCP, pr)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	pw.CloseWithError(errors.New("the test sends no more"))
	if err != nil {
		t.Fatalf("oversized body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized body: %d", resp.StatusCode)
	}
	resp, err = http.Get(h.url + PathHealthz)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"status":"ok"`) {
		t.Fatalf("healthz: %d %s", resp.StatusCode, body)
	}
	if n := len(h.invocations()); n != 0 {
		t.Fatalf("refused requests reached the CLI %d times", n)
	}
}

func TestCheckBind(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		addr   string
		tokens []string
		force  bool
		ok     bool
	}{
		{"127.0.0.1:8080", nil, false, true},
		{"localhost:0", nil, false, true},
		{"[::1]:8080", nil, false, true},
		{"0.0.0.0:8080", nil, false, false},
		{":8080", nil, false, false},
		{"192.0.2.1:8080", nil, false, false},
		{"0.0.0.0:8080", []string{testToken}, false, true},
		{"0.0.0.0:8080", nil, true, true},
		{"nonsense", nil, false, false},
	} {
		err := CheckBind(c.addr, c.tokens, c.force)
		if (err == nil) != c.ok {
			t.Errorf("CheckBind(%q, %v, %v) = %v", c.addr, c.tokens, c.force, err)
		}
	}
}

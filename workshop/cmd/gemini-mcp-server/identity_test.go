package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tests of this file check that what a caller (a bearer token, or
// without tokens a remote address) owns over HTTP stays its own: its MCP
// sessions and the questions put to its user, its rate limits, and the
// tools its user allowed for good.

// connectAs connects a go-sdk client to addr over transport ("mcp" or
// "sse") with token ("" for none), speaking protocol ("" for the
// client's default).
func connectAs(t *testing.T, addr, transport, token string, opts *mcp.ClientOptions, protocol string) *mcp.ClientSession {
	t.Helper()
	hc := http.DefaultClient
	if token != "" {
		hc = &http.Client{Transport: authTransport(token)}
	}
	var tr mcp.Transport = &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: hc}
	if transport == "sse" {
		tr = &mcp.SSEClientTransport{Endpoint: "http://" + addr + "/sse", HTTPClient: hc}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "identity-test", Version: "1"}, opts).
		Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatalf("connect over %s: %v", transport, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// forge sends, as token, a request on /mcp carrying the session id of
// another client, and returns the HTTP status.
func forge(t *testing.T, addr, token, method, session, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+addr+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	ctx, cancel := context.WithCancel(guardCtx(t))
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if method != http.MethodGet {
		io.Copy(io.Discard, resp.Body)
	}
	return resp.StatusCode
}

// TestHostConfirmationAnsweredOnlyByItsCaller: over stateful HTTP with two
// tokens, while A's user is asked about a downstream tool, B sends answers
// on A's session for every small request id, and requests and a stream
// and a DELETE on it: each is refused with 404, the tool does not run, and
// A's own answer (decline) is the one that counts.
func TestHostConfirmationAnsweredOnlyByItsCaller(t *testing.T) {
	t.Parallel()
	h := newHostEnv(t, map[string]any{"db": down(t, nil, "-tool", "query")})
	h.vars = append(h.vars, "GEMINI_MCP_TOKENS="+tokenOne+","+tokenTwo)
	addr := h.serve(t)
	asking, answer := make(chan struct{}), make(chan struct{})
	a := connectAs(t, addr, "mcp", tokenOne, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		close(asking)
		select {
		case <-answer:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &mcp.ElicitResult{Action: "decline"}, nil
	}}, "2025-11-25")
	h.connected(t, "db")
	prompt := `[[call:mcp_db_query:{"sql":"drop table users"}]]`
	done := make(chan string, 1)
	go func() {
		res, err := a.CallTool(guardCtx(t), &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": prompt}})
		if err != nil || len(res.Content) == 0 {
			done <- fmt.Sprintf("error: %v %+v", err, res)
			return
		}
		done <- res.Content[0].(*mcp.TextContent).Text
	}()
	<-asking
	for id := 1; id <= 10; id++ {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"action":"accept","content":{"decision":"once"}}}`, id)
		if code := forge(t, addr, tokenTwo, http.MethodPost, a.ID(), body); code != http.StatusNotFound {
			t.Errorf("B's answer with id %d on A's session: status %d, want 404", id, code)
		}
	}
	if code := forge(t, addr, tokenTwo, http.MethodPost, a.ID(), `{"jsonrpc":"2.0","id":99,"method":"tools/list"}`); code != http.StatusNotFound {
		t.Errorf("B's request on A's session: status %d, want 404", code)
	}
	if code := forge(t, addr, tokenTwo, http.MethodGet, a.ID(), ""); code != http.StatusNotFound {
		t.Errorf("B's stream on A's session: status %d, want 404", code)
	}
	if code := forge(t, addr, tokenTwo, http.MethodDelete, a.ID(), ""); code != http.StatusNotFound {
		t.Errorf("B's DELETE of A's session: status %d, want 404", code)
	}
	close(answer)
	text := <-done
	fr := h.results(prompt)
	if len(fr) != 1 || !strings.Contains(string(fr[0].Response), "the user declined this call") {
		t.Errorf("function responses %s, want A's decline (answer %q)", fmtResponses(fr), text)
	}
	if !strings.Contains(text, "mcp_db_query returned") {
		t.Errorf("A's answer %q", text)
	}
	// A's session is still A's.
	if _, err := a.ListTools(guardCtx(t), nil); err != nil {
		t.Errorf("A's session after B's attempts: %v", err)
	}
}

// TestHostMRTRAnswerOnlyFromItsCaller: on the 2026-07-28 path (stateless
// HTTP, two tokens), B bringing an answer under A's request state is
// refused and leaves the question pending: A's answer then runs the tool.
func TestHostMRTRAnswerOnlyFromItsCaller(t *testing.T) {
	t.Parallel()
	h := newHostEnv(t, map[string]any{"db": down(t, nil, "-tool", "query")})
	h.vars = append(h.vars, "GEMINI_MCP_TOKENS="+tokenOne+","+tokenTwo)
	addr := h.serve(t, "--stateless")
	raw := &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, nil }}
	a := connectAs(t, addr, "mcp", tokenOne, raw, "2026-07-28")
	b := connectAs(t, addr, "mcp", tokenTwo, raw, "2026-07-28")
	h.connected(t, "db")
	prompt := `[[call:mcp_db_query:{"sql":"select 7"}]]`
	args := map[string]any{"prompt": prompt}
	res, err := a.CallTool(guardCtx(t), &mcp.CallToolParams{Name: "chat", Arguments: args})
	if err != nil || !res.NeedsInput() {
		t.Fatalf("A's call: %v %+v, want an input request", err, res)
	}
	yes := mcp.InputResponseMap{"confirm-tool": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}}
	res2, err := b.CallTool(guardCtx(t), &mcp.CallToolParams{Name: "chat", Arguments: args, RequestState: res.RequestState, InputResponses: yes})
	if err != nil || !res2.IsError {
		t.Errorf("B's answer under A's request state: %v %+v, want refused", err, res2)
	}
	if fr := h.results(prompt); len(fr) != 0 {
		t.Fatalf("the tool ran on B's answer: %s", fmtResponses(fr))
	}
	res3, err := a.CallTool(guardCtx(t), &mcp.CallToolParams{Name: "chat", Arguments: args, RequestState: res.RequestState, InputResponses: yes})
	if err != nil || res3.IsError || len(res3.Content) == 0 {
		t.Fatalf("A's answer: %v %+v", err, res3)
	}
	if fr := h.results(prompt); len(fr) != 1 || !strings.Contains(string(fr[0].Response), `query {\"sql\":\"select 7\"}`) {
		t.Errorf("function responses %s, want the tool's result on A's answer", fmtResponses(fr))
	}
}

// TestHostAlwaysAllowLastsForTheCaller: over HTTP with two tokens, A's
// user allows db's tools for good: A's next chat, on a new MCP session,
// is not asked; B is asked. The question says how long the grant lasts
// and for whom.
func TestHostAlwaysAllowLastsForTheCaller(t *testing.T) {
	t.Parallel()
	h := newHostEnv(t, map[string]any{"db": down(t, nil, "-tool", "query")})
	h.vars = append(h.vars, "GEMINI_MCP_TOKENS="+tokenOne+","+tokenTwo)
	addr := h.serve(t)
	h.connected(t, "db")
	var mu sync.Mutex
	asked := map[string][]string{}
	client := func(token string) *mcp.ClientSession {
		return connectAs(t, addr, "mcp", token, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			defer mu.Unlock()
			asked[token] = append(asked[token], req.Params.Message)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "server"}}, nil
		}}, "2025-11-25")
	}
	prompt := `[[call:mcp_db_query:{"sql":"select 1"}]]`
	chat(t, client(tokenOne), "chat", map[string]any{"prompt": prompt})
	text, _ := chat(t, client(tokenOne), "chat", map[string]any{"prompt": prompt})
	if !strings.Contains(text, `query {\"sql\":\"select 1\"}`) {
		t.Errorf("A's second chat: %q", text)
	}
	chat(t, client(tokenTwo), "chat", map[string]any{"prompt": prompt})
	mu.Lock()
	defer mu.Unlock()
	if len(asked[tokenOne]) != 1 || len(asked[tokenTwo]) != 1 {
		t.Fatalf("asked A %d times, B %d times; want once each", len(asked[tokenOne]), len(asked[tokenTwo]))
	}
	if q := asked[tokenOne][0]; !strings.Contains(q, "until the server restarts") || !strings.Contains(q, "bearer token") {
		t.Errorf("the question does not say how long an always-allow lasts and for whom: %q", q)
	}
}

// TestRateLimitsFollowTheCaller: a token that used its limit on /mcp has
// none left on /sse nor on a new session, while another token has its
// own; without tokens, two sessions from one address share one bucket.
func TestRateLimitsFollowTheCaller(t *testing.T) {
	t.Parallel()
	e, _ := apiEnv(t)
	e.vars = append(e.vars, "GEMINI_MCP_TOKENS="+tokenOne+","+tokenTwo)
	addr, _ := startHTTP(t, e, "--backend", "api", "--rate-limits", "sessions=1/h")
	limited := func(cs *mcp.ClientSession) bool {
		t.Helper()
		res, err := callTool(cs, "sessions", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		return res.IsError && strings.Contains(resultText(res), "rate limit")
	}
	if limited(connectAs(t, addr, "mcp", tokenOne, nil, "")) {
		t.Fatal("the first call was limited")
	}
	if !limited(connectAs(t, addr, "sse", tokenOne, nil, "")) {
		t.Error("the same token on /sse got a fresh bucket")
	}
	if !limited(connectAs(t, addr, "mcp", tokenOne, nil, "")) {
		t.Error("the same token on a new session got a fresh bucket")
	}
	if limited(connectAs(t, addr, "mcp", tokenTwo, nil, "")) {
		t.Error("another token was limited")
	}

	e2, _ := apiEnv(t)
	addr2, _ := startHTTP(t, e2, "--backend", "api", "--rate-limits", "sessions=1/h")
	if limited(connectAs(t, addr2, "mcp", "", nil, "")) {
		t.Fatal("without tokens, the first call was limited")
	}
	if !limited(connectAs(t, addr2, "mcp", "", nil, "")) {
		t.Error("without tokens, a second session from the same address got a fresh bucket")
	}
	if !limited(connectAs(t, addr2, "sse", "", nil, "")) {
		t.Error("without tokens, an SSE session from the same address got a fresh bucket")
	}
}

// TestConcurrentNewSessionsOverHTTP: hundreds of clients with three
// tokens open a Streamable HTTP session each at once and make their first
// requests on it (notifications/initialized, ping): each is answered,
// none is told that its new session is unknown.
func TestConcurrentNewSessionsOverHTTP(t *testing.T) {
	t.Parallel()
	const clients = 600
	tokens := []string{tokenOne, tokenTwo, "third-token-0123456789"}
	e := newEnv(t)
	e.vars = append(e.vars, "GEMINI_MCP_TOKENS="+strings.Join(tokens, ","))
	addr, _ := startHTTP(t, e, "--max-sessions", "2000", "--max-sessions-per-token", "1000", "--max-conns-per-ip", "0")
	tr := &http.Transport{MaxIdleConnsPerHost: clients}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr, Timeout: 2 * time.Minute}
	post := func(token, session, body string) (int, string, string, error) {
		req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", strings.NewReader(body))
		if err != nil {
			return 0, "", "", err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b), nil
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		failures []string
		start    = make(chan struct{})
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, fmt.Sprintf(format, args...))
	}
	for i := range clients {
		token := tokens[i%len(tokens)]
		wg.Go(func() {
			<-start
			code, id, body, err := post(token, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
			if err != nil || code != http.StatusOK || id == "" {
				fail("client %d: initialize: %v %d %q", i, err, code, body)
				return
			}
			if code, _, body, err := post(token, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil || code != http.StatusAccepted {
				fail("client %d: initialized on its new session: %v %d %q", i, err, code, body)
				return
			}
			if code, _, body, err := post(token, id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); err != nil || code != http.StatusOK {
				fail("client %d: ping on its new session: %v %d %q", i, err, code, body)
			}
		})
	}
	close(start)
	wg.Wait()
	if len(failures) > 0 {
		t.Errorf("%d of %d new sessions failed; the first: %s", len(failures), clients, strings.Join(failures[:min(5, len(failures))], "; "))
	}
}

// TestSSESessionsBelongToTheirToken: over HTTP with two tokens, A chats
// over /sse. B, over /mcp or /sse, neither lists A's session nor continues
// it, by its id or as its newest, and nothing of A's conversation is sent
// to Gemini for B. A lists it over /sse and /mcp, and continues it over
// both, with its history.
func TestSSESessionsBelongToTheirToken(t *testing.T) {
	t.Parallel()
	e, fake := apiEnv(t)
	e.vars = append(e.vars, "GEMINI_MCP_TOKENS="+tokenOne+","+tokenTwo)
	addr, _ := startHTTP(t, e, "--backend", "api", "--store", "memory:")
	aSSE := connectAs(t, addr, "sse", tokenOne, nil, "")
	res := callOK(t, aSSE, "chat", map[string]any{"prompt": "secret of A: the vault code is 4711"})
	id, _ := res.Meta["sessionId"].(string)
	if id == "" {
		t.Fatalf("A's chat over /sse has no sessionId: %+v", res)
	}
	listed := func(cs *mcp.ClientSession) []string {
		t.Helper()
		res := callOK(t, cs, "sessions", map[string]any{})
		raw, _ := json.Marshal(res.StructuredContent)
		var out struct{ Sessions []struct{ ID string } }
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, s := range out.Sessions {
			ids = append(ids, s.ID)
		}
		return ids
	}
	sent := len(fake.Requests())
	for _, transport := range []string{"mcp", "sse"} {
		b := connectAs(t, addr, transport, tokenTwo, nil, "")
		if got := listed(b); slices.Contains(got, id) {
			t.Errorf("B over /%s lists A's session: %v", transport, got)
		}
		for _, args := range []map[string]any{
			{"prompt": "what was the code?", "sessionId": id},
			{"prompt": "what was the code?"},
		} {
			res, err := callTool(b, "chat-reply", args)
			if err == nil && !res.IsError {
				t.Errorf("B over /%s continued %v: %s", transport, args, resultText(res))
			}
		}
	}
	for _, r := range fake.Requests()[sent:] {
		if strings.Contains(string(r.Body), "4711") {
			t.Fatalf("A's conversation was sent to Gemini for B: %s", r.Body)
		}
	}
	aMCP := connectAs(t, addr, "mcp", tokenOne, nil, "")
	for _, a := range []struct {
		transport string
		cs        *mcp.ClientSession
	}{{"sse", aSSE}, {"mcp", aMCP}} {
		if got := listed(a.cs); !slices.Contains(got, id) {
			t.Errorf("A over /%s does not list its session %s: %v", a.transport, id, got)
		}
		before := len(fake.Requests())
		res := callOK(t, a.cs, "chat-reply", map[string]any{"prompt": "A again over " + a.transport, "sessionId": id})
		if res.Meta["sessionId"] != id {
			t.Errorf("A's reply over /%s: session %v, want %s", a.transport, res.Meta["sessionId"], id)
		}
		reqs := fake.Requests()[before:]
		if len(reqs) == 0 || !strings.Contains(string(reqs[len(reqs)-1].Body), "4711") {
			t.Errorf("A's reply over /%s was not sent with its history", a.transport)
		}
	}
}

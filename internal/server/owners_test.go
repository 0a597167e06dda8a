package server

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// sseEndpoint opens an SSE stream as token and returns the endpoint its
// first event names; the stream ends when the test does.
func sseEndpoint(t *testing.T, url, token string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+PathSSE, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return url + data
		}
	}
	t.Fatalf("no endpoint event on the SSE stream (status %d): %v", resp.StatusCode, sc.Err())
	return ""
}

func postAs(t *testing.T, url, token, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestSSESessionBelongsToItsCaller: a message POSTed to an SSE session by
// another token is refused with 404 and never reaches the session; its
// own token's is accepted.
func TestSSESessionBelongsToItsCaller(t *testing.T) {
	t.Parallel()
	h := newHTTPHarness(t, HTTPOptions{Tokens: []string{testToken, otherToken}})
	endpoint := sseEndpoint(t, h.url, testToken)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	if code := postAs(t, endpoint, otherToken, init); code != http.StatusNotFound {
		t.Errorf("another token's message: status %d, want 404", code)
	}
	if code := postAs(t, endpoint, testToken, init); code != http.StatusAccepted {
		t.Errorf("the owner's message: status %d, want 202", code)
	}
}

// TestUnknownSessionIs404: a request naming a Streamable HTTP session that
// does not exist is refused before the SDK sees it, as one of another
// caller's.
func TestUnknownSessionIs404(t *testing.T) {
	t.Parallel()
	h := newHTTPHarness(t, HTTPOptions{Tokens: []string{testToken}})
	_, _, id := initSession(t, h.url, testToken)
	if id == "" {
		t.Fatal("no session")
	}
	for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(method, h.url+PathMCP, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Mcp-Session-Id", id+"x")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s on an unknown session: %d, want 404", method, resp.StatusCode)
		}
	}
	if code := endSession(h.url, otherToken, id); code != http.StatusUnauthorized {
		t.Errorf("DELETE with a token the server does not have: %d, want 401", code)
	}
}

func TestCallerOf(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
	r.RemoteAddr = "192.0.2.7:41234"
	r.Header.Set("X-Forwarded-For", "198.51.100.1")
	if c := callerOf(r, false); c != "addr:192.0.2.7" {
		t.Errorf("without tokens: %q (X-Forwarded-For is not trusted)", c)
	}
	r.RemoteAddr = "[::1]:5000"
	if c := callerOf(r, false); c != "addr:::1" {
		t.Errorf("IPv6: %q", c)
	}
	r.Header.Set("Authorization", "Bearer "+testToken)
	if c := callerOf(r, true); c != "token:"+clientID(r) {
		t.Errorf("with a token: %q", c)
	}
	r.RemoteAddr = "192.0.2.8:1"
	if a, b := callerOf(r, true), callerOf(r, true); a != b {
		t.Errorf("one token from two addresses: %q, %q", a, b)
	}
}

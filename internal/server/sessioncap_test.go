package server

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// initSession sends an initialize with token and returns the status, the
// body and the new session's id, ended at cleanup.
func initSession(t *testing.T, url, token string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+PathMCP, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	id := resp.Header.Get("Mcp-Session-Id")
	if id != "" {
		t.Cleanup(func() { endSession(url, token, id) })
	}
	return resp.StatusCode, string(body), id
}

func endSession(url, token, id string) int {
	del, _ := http.NewRequest(http.MethodDelete, url+PathMCP, nil)
	del.Header.Set("Mcp-Session-Id", id)
	if token != "" {
		del.Header.Set("Authorization", "Bearer "+token)
	}
	r, err := http.DefaultClient.Do(del)
	if err != nil {
		return 0
	}
	r.Body.Close()
	return r.StatusCode
}

// TestHTTPSessionCaps: past its per-token cap a token gets 429, past the
// total cap anyone gets 503, each saying what to do; a session that ends
// frees its slot.
func TestHTTPSessionCaps(t *testing.T) {
	t.Parallel()
	h := newHTTPHarness(t, HTTPOptions{Tokens: []string{testToken, otherToken}, MaxSessions: 3, MaxSessionsPerToken: 2})
	var first string
	for i := range 2 {
		code, body, id := initSession(t, h.url, testToken)
		if code != http.StatusOK || id == "" {
			t.Fatalf("session %d: %d %s", i, code, body)
		}
		if first == "" {
			first = id
		}
	}
	if code, body, _ := initSession(t, h.url, testToken); code != http.StatusTooManyRequests || !strings.Contains(body, "--max-sessions-per-token") || !strings.Contains(body, "DELETE") {
		t.Fatalf("third session of one token: %d %s", code, body)
	}
	if code, body, _ := initSession(t, h.url, otherToken); code != http.StatusOK {
		t.Fatalf("the other token's first session: %d %s", code, body)
	}
	if code, body, _ := initSession(t, h.url, otherToken); code != http.StatusServiceUnavailable || !strings.Contains(body, "--max-sessions") {
		t.Fatalf("a session past the total cap: %d %s", code, body)
	}
	if code := endSession(h.url, testToken, first); code != http.StatusNoContent && code != http.StatusOK {
		t.Fatalf("DELETE: %d", code)
	}
	if code, body, _ := initSession(t, h.url, otherToken); code != http.StatusOK {
		t.Fatalf("a session after one ended: %d %s", code, body)
	}
}

// TestHTTPSessionCapIdleExpiry: a session that expires idle frees its
// slot.
func TestHTTPSessionCapIdleExpiry(t *testing.T) {
	t.Parallel()
	h := newHTTPHarness(t, HTTPOptions{MaxSessions: 1, SessionIdleTimeout: 200 * time.Millisecond})
	code, body, first := initSession(t, h.url, "")
	if code != http.StatusOK {
		t.Fatalf("first session: %d %s", code, body)
	}
	// Retried until the first session has expired; the deadline is only a
	// failure guard.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, body, _ = initSession(t, h.url, "")
		if code == http.StatusOK {
			break
		}
		if code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("after idle expiry: %d %s", code, body)
		}
	}
	if code := endSession(h.url, "", first); code != http.StatusNotFound {
		t.Fatalf("the expired session answered DELETE with %d", code)
	}
}

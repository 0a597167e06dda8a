package server

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/identity"
)

// mcpPost sends body to /mcp as token, on session id when given, and
// returns the status, the session id of the answer and its body.
func mcpPost(c *http.Client, url, token, session, body string) (int, string, string, error) {
	req, err := http.NewRequest(http.MethodPost, url+PathMCP, strings.NewReader(body))
	if err != nil {
		return 0, "", "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b), nil
}

// TestConcurrentNewSessionsKeepTheirOwner: hundreds of clients open a
// Streamable HTTP session at once and make their first request on it:
// every one is answered, none is told its new session is unknown (a
// session bound by one request was forgotten by another's that looked at
// the live sessions a moment before).
func TestConcurrentNewSessionsKeepTheirOwner(t *testing.T) {
	t.Parallel()
	const clients = 300
	tokens := []string{testToken, otherToken, "third-token-0123456789abcdef"}
	h := newHTTPHarness(t, HTTPOptions{Tokens: tokens, MaxSessions: 2 * clients, MaxSessionsPerToken: clients})
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: 0}}
	defer c.CloseIdleConnections()
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
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
			code, id, body, err := mcpPost(c, h.url, token, "", init)
			if err != nil || code != http.StatusOK || id == "" {
				fail("client %d: initialize: %v %d %q", i, err, code, body)
				return
			}
			defer endSession(h.url, token, id)
			if code, _, body, err := mcpPost(c, h.url, token, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil || code != http.StatusAccepted {
				fail("client %d: initialized on its new session: %v %d %q", i, err, code, body)
				return
			}
			if code, _, body, err := mcpPost(c, h.url, token, id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); err != nil || code != http.StatusOK {
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

// ownersHarness serves a bare MCP server over Streamable HTTP behind the
// owners' check alone, each request's caller named by its bearer token.
func ownersHarness(t *testing.T, binding func(id string), timeout time.Duration) (*sessionOwners, string) {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "owners-test", Version: "1"}, nil)
	o := &sessionOwners{srv: srv, log: slog.New(slog.DiscardHandler), streamable: map[string]string{}, sse: map[string]string{}, binding: binding}
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{SessionTimeout: timeout})
	inner := o.wrap(streamable)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		inner.ServeHTTP(w, r.WithContext(identity.With(r.Context(), identity.ForToken(token))))
	}))
	t.Cleanup(func() {
		ts.Close()
		for ss := range srv.Sessions() {
			ss.Close()
		}
	})
	return o, ts.URL
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`

// TestOwnerBoundMeanwhileIsKept: while A's new session is being bound
// (found among the live sessions, its owner not yet recorded), B opens a
// session and makes a request on it; A's bind then completes. B's
// session is still B's: another session's bind never forgets it.
func TestOwnerBoundMeanwhileIsKept(t *testing.T) {
	t.Parallel()
	aBinding, bDone := make(chan struct{}), make(chan struct{})
	var once sync.Once
	_, url := ownersHarness(t, func(string) {
		first := false
		once.Do(func() { first = true })
		if first {
			close(aBinding)
			<-bDone
		}
	}, 0)
	c := http.DefaultClient
	type opened struct {
		id   string
		code int
		err  error
	}
	aOpened := make(chan opened, 1)
	go func() {
		code, id, _, err := mcpPost(c, url, "a", "", initBody)
		aOpened <- opened{id, code, err}
	}()
	<-aBinding
	code, b, body, err := mcpPost(c, url, "b", "", initBody)
	if err != nil || code != http.StatusOK || b == "" {
		close(bDone)
		t.Fatalf("B's initialize: %v %d %q", err, code, body)
	}
	if code, _, body, err := mcpPost(c, url, "b", b, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil || code != http.StatusAccepted {
		t.Errorf("B's first request: %v %d %q", err, code, body)
	}
	close(bDone)
	a := <-aOpened
	if a.err != nil || a.code != http.StatusOK || a.id == "" {
		t.Fatalf("A's initialize: %v %d", a.err, a.code)
	}
	for _, s := range []struct{ token, id string }{{"a", a.id}, {"b", b}} {
		if code, _, body, err := mcpPost(c, url, s.token, s.id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); err != nil || code != http.StatusOK {
			t.Errorf("%s's request on its session after A's bind: %v %d %q", s.token, err, code, body)
		}
	}
	if code, _, _, _ := mcpPost(c, url, "a", b, `{"jsonrpc":"2.0","id":3,"method":"ping"}`); code != http.StatusNotFound {
		t.Errorf("A's request on B's session: %d, want 404", code)
	}
}

// TestOwnerForgottenWhenItsSessionEnds: a session's owner is forgotten
// once the session ends, by a DELETE or its idle timeout, and only then.
// The DELETE is tried on a server without an idle timeout: with one of
// 300 ms, a busy machine could end the session by it between its
// initialize and the check of its owner.
func TestOwnerForgottenWhenItsSessionEnds(t *testing.T) {
	t.Parallel()
	owned := func(o *sessionOwners, id string) bool {
		o.mu.Lock()
		defer o.mu.Unlock()
		_, ok := o.streamable[id]
		return ok
	}
	// The owner is forgotten by the goroutine that waits for its session
	// to end: polled, with a guard for a machine however busy.
	gone := func(o *sessionOwners, id string) bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return geminitest.Poll(ctx, "the owner forgotten", func() (bool, error) { return !owned(o, id), nil }) == nil
	}
	open := func(url string) string {
		t.Helper()
		_, id, _, err := mcpPost(http.DefaultClient, url, "a", "", initBody)
		if err != nil || id == "" {
			t.Fatalf("initialize: %v", err)
		}
		return id
	}

	o, url := ownersHarness(t, nil, 0)
	deleted, kept := open(url), open(url)
	if !owned(o, deleted) || !owned(o, kept) {
		t.Fatal("a new session has no owner")
	}
	if code := endSession(url, "a", deleted); code != http.StatusNoContent && code != http.StatusOK {
		t.Fatalf("DELETE: %d", code)
	}
	if !gone(o, deleted) {
		t.Error("the owner of a deleted session is still recorded")
	}
	if !owned(o, kept) {
		t.Error("the owner of a live session was forgotten with another session's")
	}

	o, url = ownersHarness(t, nil, 300*time.Millisecond)
	if idle := open(url); !gone(o, idle) {
		t.Error("the owner of a session closed by its idle timeout is still recorded")
	}
}

package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// oldClient opens a session at protocol 2025-03-26, the last that allows
// JSON-RPC batches, and returns a function that POSTs on it.
func oldClient(t *testing.T, url string) func(ctx context.Context, body string) (*http.Response, error) {
	t.Helper()
	session := ""
	post := func(ctx context.Context, body string) (*http.Response, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+PathMCP, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-03-26")
		}
		return http.DefaultClient.Do(req)
	}
	resp, err := post(context.Background(), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"old","version":"1"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if session = resp.Header.Get("Mcp-Session-Id"); session == "" {
		t.Fatalf("initialize: %s, no session", resp.Status)
	}
	t.Cleanup(func() {
		del, _ := http.NewRequest(http.MethodDelete, url+PathMCP, nil)
		del.Header.Set("Mcp-Session-Id", session)
		if r, err := http.DefaultClient.Do(del); err == nil {
			r.Body.Close()
		}
	})
	if resp, err = post(context.Background(), `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return post
}

func batchOf(n int, prompt string) string {
	calls := make([]string, n)
	for i := range calls {
		calls[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"chat","arguments":{"prompt":%q}}}`, i+10, prompt)
	}
	return "[" + strings.Join(calls, ",") + "]"
}

// TestHTTPBatchCap: a batch over MaxBatch is refused whole, with a
// message naming the limit, and starts nothing; one within it runs.
func TestHTTPBatchCap(t *testing.T) {
	t.Parallel()
	h := newHTTPHarness(t, HTTPOptions{})
	post := oldClient(t, h.url)
	resp, err := post(context.Background(), batchOf(MaxBatch+1, "too many"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), fmt.Sprintf("at most %d messages", MaxBatch)) {
		t.Fatalf("oversized batch: %s %s", resp.Status, body)
	}
	if n := len(h.invocations()); n != 0 {
		t.Fatalf("the refused batch started %d CLIs", n)
	}
	resp, err = post(context.Background(), batchOf(2, "fine"))
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.Count(string(body), "fake-gemini") != 2 {
		t.Fatalf("batch of 2: %s %s", resp.Status, body)
	}
}

// TestHTTPDroppedBatchStopsItsCalls drops a batch's POST while its first
// call runs and the others wait for a slot: every call must end, and no
// other CLI may start.
func TestHTTPDroppedBatchStopsItsCalls(t *testing.T) {
	t.Parallel()
	inflight := NewInflight()
	h := newHTTPHarness(t, HTTPOptions{Requests: NewRequestContexts(), Inflight: inflight}, options{maxConcurrent: 1})
	post := oldClient(t, h.url)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := post(ctx, batchOf(5, "[[hang]]")); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	h.firstCLIPid(t)
	cancel()
	<-done
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := inflight.Wait(wctx); err != nil {
		t.Fatal("the batch's calls still run 10 s after its request was dropped")
	}
	if n := len(h.invocations()); n != 1 {
		t.Fatalf("%d CLIs started for a dropped batch, want only the first", n)
	}
}

// TestRequestContextsEndedRequest: a call that starts after the request
// that carried it has ended (the later calls of a long batch) gets an
// ended context, not none.
func TestRequestContextsEndedRequest(t *testing.T) {
	t.Parallel()
	rc := NewRequestContexts()
	var header http.Header
	rc.wrap(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { header = r.Header })).
		ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, PathMCP, nil))
	ctx := rc.Lookup(&mcp.CallToolRequest{Extra: &mcp.RequestExtra{Header: header}})
	if ctx == nil || ctx.Err() == nil {
		t.Fatalf("a call of an ended request got context %v", ctx)
	}
	if ctx := rc.Lookup(&mcp.CallToolRequest{Extra: &mcp.RequestExtra{Header: http.Header{}}}); ctx != nil {
		t.Fatalf("a call without a request got context %v", ctx)
	}
}

package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// liveFakes counts running (not zombie) processes of the fake CLI.
func liveFakes() int {
	n := 0
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || exe != fakeGemini {
			continue
		}
		if geminitest.Alive(pid) {
			n++
		}
	}
	return n
}

// peakSampler records the most fake CLI processes alive at once.
type peakSampler struct {
	peak atomic.Int32
	stop chan struct{}
	done chan struct{}
}

func samplePeak() *peakSampler {
	p := &peakSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			if n := int32(liveFakes()); n > p.peak.Load() {
				p.peak.Store(n)
			}
			select {
			case <-p.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return p
}

func (p *peakSampler) finish() int {
	close(p.stop)
	<-p.done
	return int(p.peak.Load())
}

func TestProgressCadence(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var msgs []string
	var values []float64
	var tokens []any
	// One report per 100 ms, plus the changes of state: the test waits
	// for ten, one of them a second in, while the CLI hangs, then cancels
	// the call. A CLI that slept a fixed time would leave a busy machine
	// fewer ticks than the test counts on (9 in 1.5 s under load).
	enough, seen := make(chan struct{}), false
	h := newHarness(t, options{progressInterval: 100 * time.Millisecond, client: &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			msgs = append(msgs, req.Params.Message)
			values = append(values, req.Params.Progress)
			tokens = append(tokens, req.Params.ProgressToken)
			if !seen && len(msgs) >= 10 && strings.Contains(strings.Join(msgs, "\n"), "gemini is running (1s elapsed)") {
				seen = true
				close(enough)
			}
		},
	}})
	params := &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "[[hang]] slow"}}
	params.SetProgressToken("tok-1")
	guard := geminitest.Context(t)
	ctx, cancel := context.WithCancel(guard)
	returned := make(chan error, 1)
	go func() {
		_, err := h.client.CallTool(ctx, params)
		returned <- err
	}()
	select {
	case <-enough:
	case <-guard.Done():
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("%d progress notifications, or none a second in: %q", len(msgs), msgs)
	}
	cancel()
	if err := <-returned; !errors.Is(err, context.Canceled) {
		t.Fatalf("the cancelled call returned %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(values); i++ {
		if values[i] <= values[i-1] {
			t.Fatalf("progress went from %v to %v", values[i-1], values[i])
		}
	}
	// A call without a token gets no notifications; a late one of the
	// first call is told apart by its token.
	mu.Unlock()
	h.call("chat", map[string]any{"prompt": "[[sleep:300]] quiet"})
	mu.Lock()
	for i, tok := range tokens {
		if tok != "tok-1" {
			t.Fatalf("notification %d (%q) carried token %v: only the first call asked for progress", i, msgs[i], tok)
		}
	}
}

// killBound is how long a stopped CLI may take to be gone: the fake would
// live its 30 s self-timeout, and its SIGTERM-proof kind until SIGKILL 1.5 s
// after the interrupt, so a bound well under 30 s still fails when the kill
// never comes, and leaves a busy machine room.
const killBound = 10 * time.Second

// TestClientCancelKillsCLI cancels a call from the client side
// (notifications/cancelled): the CLI and its child must be gone, killed
// rather than left to their own end.
func TestClientCancelKillsCLI(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.client.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "[[ignoreterm]] [[child]]", "systemPrompt": "S"}})
	}()
	inv := geminitest.WaitInvocation(t, h.log, 10*time.Second, geminitest.HasChild)
	start := time.Now()
	cancel()
	<-done
	for time.Since(start) < killBound && (geminitest.Alive(inv.Pid) || geminitest.Alive(inv.ChildPid)) {
		time.Sleep(10 * time.Millisecond)
	}
	if geminitest.Alive(inv.Pid) || geminitest.Alive(inv.ChildPid) {
		t.Fatalf("CLI (%v) or child (%v) alive %v after the client cancelled", geminitest.Alive(inv.Pid), geminitest.Alive(inv.ChildPid), killBound)
	}
	// The server stays usable, with nothing left over.
	for deadline := time.Now().Add(killBound); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m, _ := filepath.Glob(filepath.Join(tmp, "gemini-mcp-*")); len(m) == 0 {
			break
		}
	}
	if m, _ := filepath.Glob(filepath.Join(tmp, "gemini-mcp-*")); len(m) != 0 {
		t.Fatalf("left behind: %v", m)
	}
	if text, _, isErr := h.call("chat", map[string]any{"prompt": "after"}); isErr {
		t.Fatalf("after cancel: %s", text)
	}
}

func TestTimeoutMessage(t *testing.T) {
	h := newHarness(t, options{timeout: 700 * time.Millisecond})
	text, _, isErr := h.call("chat", map[string]any{"prompt": "[[stderr:100]] [[hang]]"})
	if !isErr || !strings.HasPrefix(text, "Error executing gemini: gemini timed out after 0.7 s") || !strings.Contains(text, "\nStderr: ") {
		t.Fatalf("text %q", text)
	}
	if n := liveFakes(); n != 0 {
		t.Fatalf("%d fake processes alive after the timeout", n)
	}
}

// TestConcurrencyLimit runs 16 calls of 400 ms with at most 4 processes:
// never more than 4 alive, and four waves' worth of time.
func TestConcurrencyLimit(t *testing.T) {
	// A queued call says so; the client's SDK may hand that notification
	// to the handler after the call returned, so the test waits for it.
	queued := make(chan struct{})
	var once sync.Once
	h := newHarness(t, options{maxConcurrent: 4, progressInterval: time.Second, client: &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			if strings.HasPrefix(req.Params.Message, "queued: ") {
				once.Do(func() { close(queued) })
			}
		},
	}})
	sampler := samplePeak()
	start := time.Now()
	var wg sync.WaitGroup
	for i := 0; i < 16; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			params := &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "[[sleep:400]] call " + strconv.Itoa(i)}}
			params.SetProgressToken(i + 1)
			res, err := h.client.CallTool(context.Background(), params)
			if err != nil || res.IsError {
				t.Errorf("call %d: %v %+v", i, err, res)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	peak := sampler.finish()
	if peak > 4 {
		t.Fatalf("%d CLI processes at once with a limit of 4", peak)
	}
	if peak < 2 {
		t.Fatalf("peak %d: calls did not run in parallel", peak)
	}
	if elapsed < 4*400*time.Millisecond {
		t.Fatalf("16 calls of 400 ms took %v with 4 slots: fewer than four waves", elapsed)
	}
	select {
	case <-queued:
	case <-geminitest.Context(t).Done():
		t.Fatal("no call reported that it was queued")
	}
	t.Logf("16 × 400 ms, limit 4: %v, peak %d processes", elapsed.Round(time.Millisecond), peak)
}

// TestSessionOrdering: two turns on one session never overlap; turns on
// different sessions do.
func TestSessionOrdering(t *testing.T) {
	h := newHarness(t, options{maxConcurrent: 8})
	_, a, _ := h.call("chat", map[string]any{"prompt": "a"})
	_, b, _ := h.call("chat", map[string]any{"prompt": "b"})
	sampler := samplePeak()
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := h.client.CallTool(context.Background(), &mcp.CallToolParams{Name: "chat-reply", Arguments: map[string]any{"prompt": "[[sleep:500]] turn", "sessionId": a}})
			if err != nil || res.IsError {
				t.Errorf("reply on %s: %v %+v", a, err, res)
			}
		}()
	}
	wg.Wait()
	if peak := sampler.finish(); peak != 1 {
		t.Fatalf("same session: %d turns ran at once", peak)
	}
	// Different sessions: two turns that never end by themselves are both
	// running (waited for, not timed), then cancelled.
	ctx, cancel := context.WithCancel(geminitest.Context(t))
	for _, id := range []string{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.client.CallTool(ctx, &mcp.CallToolParams{Name: "chat-reply", Arguments: map[string]any{"prompt": "[[hang]] turn", "sessionId": id}})
		}()
	}
	err := geminitest.Poll(geminitest.Context(t), "turns of two sessions running at once", func() (bool, error) { return liveFakes() == 2, nil })
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if err := geminitest.Poll(geminitest.Context(t), "the cancelled turns' CLIs to end", func() (bool, error) { return liveFakes() == 0, nil }); err != nil {
		t.Fatal(err)
	}
	// Every turn that ended landed in the session: 1 + 3 before the count
	// (the cancelled one is not kept).
	if text, _, _ := h.call("chat-reply", map[string]any{"prompt": "count", "sessionId": a}); !strings.HasPrefix(text, "fake-gemini turn=5 ") {
		t.Fatalf("turns lost: %q", text)
	}
}

func TestHTTPCancelStopsCLI(t *testing.T) {
	for _, transport := range []string{"streamable", "sse"} {
		t.Run(transport, func(t *testing.T) {
			h := newHTTPHarness(t, HTTPOptions{})
			cs, err := h.connect(t, transport, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "[[hang]]"}})
			}()
			pid := h.firstCLIPid(t)
			start := time.Now()
			cancel()
			<-done
			if !goneWithin(pid, start, killBound) {
				t.Fatalf("CLI alive %v after the cancel over %s", killBound, transport)
			}
		})
	}
}

// TestHTTPDroppedRequestStopsCLI drops the POST that carries a call, as a
// client that goes away does: with or without sessions, nobody can receive
// the answer any more, so the CLI must stop.
func TestHTTPDroppedRequestStopsCLI(t *testing.T) {
	for _, stateless := range []bool{true, false} {
		t.Run(fmt.Sprintf("stateless=%v", stateless), func(t *testing.T) {
			h := newHTTPHarness(t, HTTPOptions{Stateless: stateless, Requests: NewRequestContexts()})
			sessionID := ""
			if !stateless {
				resp, err := rawPost(context.Background(), h.url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
				if err != nil {
					t.Fatal(err)
				}
				sessionID = resp.Header.Get("Mcp-Session-Id")
				resp.Body.Close()
				r2, err := rawPost(context.Background(), h.url, sessionID, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
				if err != nil {
					t.Fatal(err)
				}
				r2.Body.Close()
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				resp, err := rawPost(ctx, h.url, sessionID, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"chat","arguments":{"prompt":"[[hang]]"}}}`)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			}()
			pid := h.firstCLIPid(t)
			start := time.Now()
			cancel()
			<-done
			if !goneWithin(pid, start, killBound) {
				t.Fatalf("the CLI still runs %v after its request was dropped", killBound)
			}
			if sessionID != "" {
				del, _ := http.NewRequest("DELETE", h.url+PathMCP, nil)
				del.Header.Set("Mcp-Session-Id", sessionID)
				if r, err := http.DefaultClient.Do(del); err == nil {
					r.Body.Close()
				}
			}
		})
	}
}

func rawPost(ctx context.Context, base, sessionID, body string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", base+PathMCP, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	if sessionID != "" {
		req.Header.Set("Mcp-Session-Id", sessionID)
	}
	return http.DefaultClient.Do(req)
}

// goneWithin reports whether pid has ended by start+limit.
func goneWithin(pid int, start time.Time, limit time.Duration) bool {
	for time.Since(start) < limit && geminitest.Alive(pid) {
		time.Sleep(10 * time.Millisecond)
	}
	return !geminitest.Alive(pid)
}

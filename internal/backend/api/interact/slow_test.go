package interact

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// serveSlow starts a server on 127.0.0.1 that never finishes an answer:
// with drip, it sends a 200 and then a byte of a JSON body every
// millisecond (never reaching MaxResponseBytes); without, nothing at
// all. It ends when the client goes away.
func serveSlow(t *testing.T, drip bool) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if !drip {
			select {
			case <-r.Context().Done():
			case <-stop:
			}
			return
		}
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, `{"id":"w","status":"in_progress","x":"`)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := io.WriteString(w, "x"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { close(stop); srv.Close() })
	return "http://" + ln.Addr().String()
}

// A call whose answer never comes, or comes a byte at a time for ever, is
// given up after Config.CallTimeout, whatever its context (a research
// job's has hours), with an error that says so and that Wait takes for a
// passing one.
func TestSlowAnswerBounded(t *testing.T) {
	for _, drip := range []bool{false, true} {
		c, err := New(Config{APIKey: "k", BaseURL: serveSlow(t, drip), HTTPClient: &http.Client{}, CallTimeout: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 3)
		go func() { _, err := c.Get(context.Background(), "w"); done <- err }()
		go func() { _, err := c.Cancel(context.Background(), "w"); done <- err }()
		go func() { _, err := c.StartAgent(context.Background(), AgentRequest{Input: "q"}); done <- err }()
		guard := geminitest.Context(t)
		for range 3 {
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), "did not answer within 300ms") || !passing(err) {
					t.Errorf("drip %v: %v, want the call given up after its bound", drip, err)
				}
				if !errors.Is(err, ErrTimeout) {
					t.Errorf("drip %v: %v does not match ErrTimeout", drip, err)
				}
			case <-guard.Done():
				t.Fatalf("drip %v: a call to an API that never answers did not return", drip)
			}
		}
	}
}

// A foreground model interaction, whose answer comes only when the model
// has finished, is bounded by its context alone.
func TestForegroundModelNotCutByCallTimeout(t *testing.T) {
	s, _ := newFake(t)
	c, err := New(Config{APIKey: "k", BaseURL: s.URL(), HTTPClient: &http.Client{}, CallTimeout: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.StartModel(geminitest.Context(t), ModelRequest{Model: "gemini-3-flash", Input: "hello"}); err != nil || r.Status != Completed {
		t.Fatalf("a foreground model interaction: %+v %v", r, err)
	}
	if _, err := c.Get(geminitest.Context(t), "w"); !errors.Is(err, ErrTimeout) {
		t.Fatalf("a get past a bound of 1ns: %v", err)
	}
}

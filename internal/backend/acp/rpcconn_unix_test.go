//go:build unix

package acp

import (
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/proc"
)

// connHandler records what a connection hands its owner.
type connHandler struct {
	notes    chan rpcMessage
	long     chan []byte
	keepLong bool
}

func newConnHandler(keepLong bool) *connHandler {
	return &connHandler{notes: make(chan rpcMessage, 8), long: make(chan []byte, 8), keepLong: keepLong}
}

func (h *connHandler) notification(m rpcMessage) { h.notes <- m }

func (h *connHandler) request(m rpcMessage) (json.RawMessage, *rpcError) {
	if m.Method == "ask" {
		return json.RawMessage(`{"answer":42}`), nil
	}
	return nil, &rpcError{Code: -32601, Message: "no " + m.Method}
}

func (h *connHandler) longLine(start []byte, pid int) bool {
	h.long <- append([]byte(nil), start...)
	return h.keepLong
}

// dialScript connects to a shell script standing for the agent.
func dialScript(t *testing.T, script string, maxLine int, h rpcHandler, atExit func()) *rpcConn {
	t.Helper()
	c, err := dialRPC(proc.Program{Path: "/bin/sh", Args: []string{"-c", script}}, proc.NewTailBuffer(stderrKeep), maxLine, h, atExit, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.kill)
	return c
}

// TestRPCConnCallsUntilTheChildEnds: a call gets its response; a call
// the child leaves unanswered by exiting fails as errProcessGone, saying
// how the child ended and what it wrote on stderr; the connection is dead
// only after its atExit ran, and a later call fails at once.
func TestRPCConnCallsUntilTheChildEnds(t *testing.T) {
	var cleaned atomic.Bool
	c := dialScript(t, `read a; echo '{"jsonrpc":"2.0","id":1,"result":{"ok":true}}'; read b; echo "bad things" >&2; exit 3`,
		1<<20, newConnHandler(false), func() { cleaned.Store(true) })
	var res struct{ OK bool }
	if err := c.call(geminitest.Context(t), "first", nil, &res); err != nil || !res.OK {
		t.Fatalf("first call: %v, %+v", err, res)
	}
	err := c.call(geminitest.Context(t), "second", nil, nil)
	if !errors.Is(err, errProcessGone) || !strings.Contains(err.Error(), "exit code 3") || !strings.Contains(err.Error(), "bad things") {
		t.Fatalf("a call the child left unanswered: %v", err)
	}
	select {
	case <-c.done():
	default:
		t.Fatal("a call failed on the child's end before the connection was dead")
	}
	if !cleaned.Load() {
		t.Error("the connection was dead before its atExit ran")
	}
	if err := c.call(geminitest.Context(t), "third", nil, nil); !errors.Is(err, errProcessGone) || c.err() == nil {
		t.Fatalf("a call after the end: %v (err %v)", err, c.err())
	}
}

// TestRPCConnHandsOverWhatComesUnasked: notifications go to the handler,
// and the agent's requests are answered with what it says, result or
// error, under the request's id (the script echoes the answers back as a
// notification's params).
func TestRPCConnHandsOverWhatComesUnasked(t *testing.T) {
	h := newConnHandler(false)
	c := dialScript(t, `echo '{"jsonrpc":"2.0","method":"note","params":{"n":1}}'
echo '{"jsonrpc":"2.0","id":"q1","method":"ask","params":{}}'
read a; echo "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":$a}"
echo '{"jsonrpc":"2.0","id":7,"method":"fs/read_text_file","params":{}}'
read b; echo "{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":$b}"
read never`, 1<<20, h, nil)
	want := []struct{ method, has string }{
		{"note", `"n":1`},
		{"echo", `"id":"q1","result":{"answer":42}`},
		{"echo", `"id":7,"error":{"code":-32601,"message":"no fs/read_text_file"}`},
	}
	for _, w := range want {
		select {
		case m := <-h.notes:
			if m.Method != w.method || !strings.Contains(string(m.Params), w.has) {
				t.Fatalf("got %s %s, want %s with %s", m.Method, m.Params, w.method, w.has)
			}
		case <-geminitest.Context(t).Done():
			t.Fatalf("no %s notification", w.method)
		case <-c.done():
			t.Fatalf("the child ended before its %s notification: %v", w.method, c.err())
		}
	}
}

// TestRPCConnLongLine: a line past the cap is not read into memory; the
// handler gets its first longLinePrefix bytes, and the connection goes on when it says so,
// and stops the child when it does not.
func TestRPCConnLongLine(t *testing.T) {
	long := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"x","text":"` + strings.Repeat("a", 10000) + `"}}`
	script := `echo '` + long + `'; read a; echo '{"jsonrpc":"2.0","id":1,"result":{}}'; read never`

	h := newConnHandler(true)
	c := dialScript(t, script, 200, h, nil)
	if err := c.call(geminitest.Context(t), "after", nil, nil); err != nil {
		t.Fatalf("the connection did not go on past a long line its handler kept: %v", err)
	}
	if start := <-h.long; len(start) != longLinePrefix || !strings.HasPrefix(long, string(start)) {
		t.Fatalf("the handler got %d bytes %q", len(start), start)
	}

	h = newConnHandler(false)
	c = dialScript(t, script, 200, h, nil)
	select {
	case <-c.done():
	case <-geminitest.Context(t).Done():
		t.Fatal("the child runs on after a long line its handler could not follow")
	}
	if len(h.long) != 1 {
		t.Fatalf("the handler was asked %d times", len(h.long))
	}
}

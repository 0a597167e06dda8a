package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tests here run the server with the API backend against a fake Gemini
// API that behaves as a broken or hostile peer would.

// callErr calls tool and fails the test unless the call fails as a tool
// error (the server answered) whose text holds every one of says.
func callErr(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any, says ...string) string {
	t.Helper()
	res, err := callTool(cs, tool, args)
	if err != nil {
		t.Fatalf("%s: the server did not answer: %v", tool, err)
	}
	text := resultText(res)
	if !res.IsError {
		t.Fatalf("%s succeeded: %s", tool, text)
	}
	for _, s := range says {
		if !strings.Contains(text, s) {
			t.Errorf("%s's error %q does not say %q", tool, text, s)
		}
	}
	return text
}

// peakRSS is the peak resident memory of process pid so far (VmHWM), in
// bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/PID/status")
	return 0
}

// TestAPIMalformedEventFailsOneCall: an event the Go SDK panics on
// ({"candidates":[null]}) fails the call that got it with a clear error,
// and the same server answers the next call.
func TestAPIMalformedEventFailsOneCall(t *testing.T) {
	t.Parallel()
	e, _ := apiEnv(t)
	cs := connect(t, e.command("--backend", "api"))
	callErr(t, cs, "chat", map[string]any{"prompt": "[[null-candidate]] one"}, "could not be read", "the Go SDK failed on it")
	if got := answerOf(callOK(t, cs, "chat", map[string]any{"prompt": "two, after the bad one"})); !strings.Contains(got, "two, after the bad one") {
		t.Fatalf("the next call's answer %q", got)
	}
}

// TestAPIHostilePeerMemory: a peer that streams 256 MB of function calls,
// or one 48 MB event, ends the call with a clear error while the server's
// peak memory stays far below what it was sent.
func TestAPIHostilePeerMemory(t *testing.T) {
	const bound = 150 << 20 // generous: the server idles near 30 MB
	for _, c := range []struct{ name, prompt, says string }{
		{"call-flood", "[[call-flood:nosuch:268435456]] flood", "function calls in one answer"},
		{"big-event", "[[big-frame:50331648]] big", "one event of its stream"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e, fake := apiEnv(t)
			cmd := e.command("--backend", "api")
			cs := connect(t, cmd)
			callErr(t, cs, "chat", map[string]any{"prompt": c.prompt}, c.says)
			peak := peakRSS(t, cmd.Process.Pid)
			t.Logf("peak RSS %.1f MB", float64(peak)/(1<<20))
			if peak > bound {
				t.Errorf("the server's peak RSS was %d MB, over %d MB", peak>>20, bound>>20)
			}
			// The server serves on.
			callOK(t, cs, "chat", map[string]any{"prompt": "after the " + c.name})
			for _, r := range streams(fake) {
				if r.Sent >= 32<<20 {
					t.Errorf("the fake sent %d MB before the call ended", r.Sent>>20)
				}
			}
		})
	}
}

// TestAPITimeoutCutsStreamingPeer: --timeout ends a call whose peer keeps
// streaming, with a timeout error; the call's own wait is only a guard.
func TestAPITimeoutCutsStreamingPeer(t *testing.T) {
	t.Parallel()
	e, fake := apiEnv(t)
	cs := connect(t, e.command("--backend", "api", "--timeout", "2s"))
	callErr(t, cs, "chat", map[string]any{"prompt": "[[drip:10]] endless"}, "did not answer within 2s")
	if r := waitArrived(t, fake, "endless"); !strings.Contains(r.LastUserText, "[[drip") {
		t.Fatalf("request %+v", r)
	}
}

// TestAPICutStreamIsIncomplete: a stream closed cleanly with no finish
// reason gives the text marked incomplete, in the text and in _meta, and
// no session.
func TestAPICutStreamIsIncomplete(t *testing.T) {
	t.Parallel()
	e, _ := apiEnv(t)
	cs := connect(t, e.command("--backend", "api"))
	res := callOK(t, cs, "chat", map[string]any{"prompt": "[[no-finish]] [[chunks:3]] cut"})
	last := res.Content[len(res.Content)-1].(*mcp.TextContent).Text
	if !strings.Contains(last, "INCOMPLETE") || !strings.Contains(last, "finish reason") || res.Meta["incomplete"] != true {
		t.Fatalf("a cut answer not marked: %q %v", last, res.Meta)
	}
	if _, ok := res.Meta["sessionId"]; ok {
		t.Fatalf("a cut first answer has a session: %v", res.Meta)
	}
	if got := answerOf(res); !strings.HasPrefix(got, "fake-api answer:") {
		t.Fatalf("the cut answer's text %q", got)
	}
	if ids := sessionIDs(t, cs); len(ids) != 0 {
		t.Fatalf("sessions after a cut answer: %q", ids)
	}
}

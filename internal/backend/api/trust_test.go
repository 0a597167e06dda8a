package api

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// asker is a Confirm that answers from a script and records what it was
// asked.
type asker struct {
	mu      sync.Mutex
	answers []backend.Decision
	err     error
	asked   []string // tool names
}

func (a *asker) confirm(_ context.Context, req backend.ConfirmRequest) (backend.Decision, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, req.Tool.Server+"."+req.Tool.Tool)
	if a.err != nil {
		return backend.Decline, a.err
	}
	d := a.answers[0]
	a.answers = a.answers[1:]
	return d, nil
}

// refusal returns the error Gemini got for the first call of the turn's
// last round, "" when the tool ran.
func refusal(t *testing.T, f *fixture) string {
	t.Helper()
	reqs := f.streams()
	got := results(t, reqs[len(reqs)-1])
	if len(got) == 0 {
		t.Fatal("no function response")
	}
	e, _ := got[0]["error"].(string)
	return e
}

func TestUntrustedToolWithoutConfirmIsRefused(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, false)
	f := newFixture(t, Options{Tools: h})
	a := f.mustRun(backend.Turn{Prompt: `[[call:mcp_demo_echo:{"text":"x"}]]`})
	if len(h.called()) != 0 {
		t.Fatalf("the untrusted tool ran: %q", h.called())
	}
	e := refusal(t, f)
	for _, want := range []string{"mcp_demo_echo was not run", "cannot be asked", "--allow-mcp-tools=demo.echo", "=demo for every tool"} {
		if !strings.Contains(e, want) {
			t.Errorf("refusal %q does not say %q", e, want)
		}
	}
	if a.Text == "" {
		t.Error("no answer")
	}
}

func TestAllowListRunsUntrustedTools(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, false)
	f := newFixture(t, Options{Tools: h, AllowTools: []string{"demo.echo"}})
	f.mustRun(backend.Turn{Prompt: `[[call:mcp_demo_echo:{"text":"x"}]] [[call:mcp_demo_fail:{}]]`})
	got := results(t, f.streams()[1])
	if !slices.Equal(h.called(), []string{"echo"}) || got[0]["output"] == nil || !strings.Contains(got[1]["error"].(string), "was not run") {
		t.Errorf("calls %q, responses %v", h.called(), got)
	}

	f.restart(Options{Tools: h, AllowTools: []string{"other", "demo"}})
	f.mustRun(backend.Turn{Prompt: `[[call:mcp_demo_fail:{}]]`})
	if !slices.Equal(h.called(), []string{"echo", "fail"}) {
		t.Errorf("calls %q", h.called())
	}
}

func TestConfirmDecisions(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, false)
	f := newFixture(t, Options{Tools: h})
	echo := `[[call:mcp_demo_echo:{"text":"x"}]]`
	fail := `[[call:mcp_demo_fail:{}]]`

	// Allow once: asked again next time.
	ask := &asker{answers: []backend.Decision{backend.AllowOnce, backend.AllowOnce}}
	a := f.mustRun(backend.Turn{Prompt: echo, Confirm: ask.confirm})
	f.mustRun(backend.Turn{Prompt: echo, Session: a.SessionID, Confirm: ask.confirm})
	if len(ask.asked) != 2 || len(h.called()) != 2 {
		t.Fatalf("asked %q, calls %q", ask.asked, h.called())
	}

	// Always this tool, always this server: the call runs, and the
	// backend asks again next time; remembering the answer is the
	// Confirm's, for whoever it asks.
	ask = &asker{answers: []backend.Decision{backend.AllowTool, backend.AllowServer, backend.Decline}}
	a = f.mustRun(backend.Turn{Prompt: echo, Confirm: ask.confirm})
	f.mustRun(backend.Turn{Prompt: echo + " " + fail, Session: a.SessionID, Confirm: ask.confirm})
	if e := results(t, f.streams()[len(f.streams())-1])[1]["error"].(string); !strings.Contains(e, "the user declined") {
		t.Errorf("declined call answered %q", e)
	}
	if !slices.Equal(ask.asked, []string{"demo.echo", "demo.echo", "demo.fail"}) {
		t.Fatalf("asked %q", ask.asked)
	}
	if n := len(h.called()); n != 4 {
		t.Errorf("%d calls, want 4: %q", n, h.called())
	}

	// A user who cannot be asked: refused, with the reason.
	ask = &asker{err: errors.New("the client does not support elicitation")}
	f.mustRun(backend.Turn{Prompt: echo, Confirm: ask.confirm})
	if e := refusal(t, f); !strings.Contains(e, "could not be asked to confirm it (the client does not support elicitation)") ||
		!strings.Contains(e, "--allow-mcp-tools") {
		t.Errorf("refusal %q", e)
	}
}

package tools

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/mcptest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// connectStub serves the tools with a stub backend over an in-memory
// transport, so that calls reach the tools through the SDK exactly as a
// client's do.
func connectStub(t *testing.T) (*mcp.ClientSession, *stubRunner) {
	t.Helper()
	store := memstore.New(session.Options{})
	t.Cleanup(func() { store.Close() })
	r := &stubRunner{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "t"}, nil)
	addAll(srv, &Deps{Conv: newConv(conversation.Options{Backend: r, Store: store, DefaultCwd: realTemp(t)}), MaxPromptBytes: 1 << 20})
	return mcptest.Connect(t, srv, nil), r
}

func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", tool, args, err)
	}
	return res
}

// TestTuningValidated checks that a temperature or thinking_mode the tools
// do not take is refused before the backend is asked, with a message that
// names the argument, the accepted values and the way out, on both tools.
func TestTuningValidated(t *testing.T) {
	t.Parallel()
	cs, r := connectStub(t)
	cases := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"temperature": 2.5}, "temperature must be a number from 0 to 2, not 2.5; omit it for the model's default"},
		{map[string]any{"temperature": -0.1}, "temperature must be a number from 0 to 2, not -0.1"},
		{map[string]any{"temperature": "hot"}, `temperature must be a number from 0 to 2, not "hot"`},
		{map[string]any{"temperature": nil}, "temperature must be a number from 0 to 2, not null"},
		{map[string]any{"thinking_mode": "huge"}, `thinking_mode must be one of off, minimal, low, medium, high, max, not "huge"; omit it for the model's default`},
		{map[string]any{"thinking_mode": "HIGH"}, `thinking_mode must be one of off, minimal, low, medium, high, max, not "HIGH"`},
		{map[string]any{"thinking_mode": 3}, `thinking_mode must be one of off, minimal, low, medium, high, max, not 3`},
		{map[string]any{"temperature": 1, "thinking_mode": ""}, `thinking_mode must be one of off, minimal, low, medium, high, max, not ""`},
	}
	for _, tool := range []string{"chat", "chat-reply"} {
		for _, c := range cases {
			args := map[string]any{"prompt": "p"}
			for k, v := range c.args {
				args[k] = v
			}
			res := call(t, cs, tool, args)
			if !res.IsError || textOf(res) != toolerr.ErrorPrefix+c.want && !strings.HasPrefix(textOf(res), toolerr.ErrorPrefix+c.want) {
				t.Errorf("%s %v: %v %q, want %q", tool, c.args, res.IsError, textOf(res), toolerr.ErrorPrefix+c.want)
			}
		}
	}
	if len(r.calls) != 0 {
		t.Fatalf("%d refused calls reached the backend", len(r.calls))
	}
}

// TestTuningPassedThrough checks that valid tuning reaches the backend's
// turn unchanged on both tools, that its absence leaves the turn untuned
// (nil, not 0), and that the bounds themselves are accepted.
func TestTuningPassedThrough(t *testing.T) {
	t.Parallel()
	cs, r := connectStub(t)
	res := call(t, cs, "chat", map[string]any{"prompt": "p"})
	if res.IsError {
		t.Fatal(textOf(res))
	}
	if got := r.last(); got.Temperature != nil || got.ThinkingMode != "" {
		t.Fatalf("untuned chat: temperature %v, thinking_mode %q", got.Temperature, got.ThinkingMode)
	}
	id := res.Meta["sessionId"].(string)
	cases := []struct {
		tool string
		args map[string]any
		temp *float64
		mode string
	}{
		{"chat", map[string]any{"temperature": 0.7, "thinking_mode": "low"}, ptr(0.7), "low"},
		{"chat", map[string]any{"temperature": 0}, ptr(0.0), ""},
		{"chat", map[string]any{"temperature": 2, "thinking_mode": "max"}, ptr(2.0), "max"},
		{"chat-reply", map[string]any{"sessionId": id, "temperature": 1.25, "thinking_mode": "minimal"}, ptr(1.25), "minimal"},
		{"chat-reply", map[string]any{"sessionId": id, "thinking_mode": "medium"}, nil, "medium"},
		{"chat-reply", map[string]any{"sessionId": id, "thinking_mode": "high"}, nil, "high"},
	}
	for _, c := range cases {
		args := map[string]any{"prompt": "p"}
		for k, v := range c.args {
			args[k] = v
		}
		if res := call(t, cs, c.tool, args); res.IsError {
			t.Fatalf("%s %v: %s", c.tool, c.args, textOf(res))
		}
		got := r.last()
		if !reflect.DeepEqual(got.Temperature, c.temp) || got.ThinkingMode != c.mode {
			t.Errorf("%s %v: the turn has temperature %v, thinking_mode %q", c.tool, c.args, got.Temperature, got.ThinkingMode)
		}
		if c.tool == "chat-reply" && got.Session != id {
			t.Errorf("%s %v: continued %q, want %s", c.tool, c.args, got.Session, id)
		}
	}
}

// TestTuningNotAppliedReported checks that a backend's note on tuning it
// could not apply reaches _meta.notApplied of the result as the client
// sees it, beside the answer, which is not an error.
func TestTuningNotAppliedReported(t *testing.T) {
	t.Parallel()
	cs, r := connectStub(t)
	r.answer = backend.Answer{NotApplied: []string{"temperature: the Gemini CLI takes no per-call temperature"}}
	res := call(t, cs, "chat", map[string]any{"prompt": "p", "temperature": 0.2})
	if res.IsError || textOf(res) != "answer to p" {
		t.Fatalf("%v %q", res.IsError, textOf(res))
	}
	got, _ := res.Meta["notApplied"].([]any)
	if len(got) != 1 || got[0] != "temperature: the Gemini CLI takes no per-call temperature" {
		t.Fatalf("_meta.notApplied = %#v", res.Meta["notApplied"])
	}
}

// TestTuningFoundAsDecoded checks that checkTuning refuses every
// spelling of a tuning argument that encoding/json would decode into one
// (any case, an escape, a non-ASCII letter that folds to an ASCII one),
// with the tuning's message, and passes the arguments that hold none.
func TestTuningFoundAsDecoded(t *testing.T) {
	t.Parallel()
	decodes := func(raw string) bool {
		var args struct {
			Temperature  json.RawMessage `json:"temperature"`
			ThinkingMode json.RawMessage `json:"thinking_mode"`
		}
		return json.Unmarshal([]byte(raw), &args) == nil && (args.Temperature != nil || args.ThinkingMode != nil)
	}
	for _, c := range []struct {
		raw string
		bad bool // carries a tuning argument outside what the tools take
	}{
		{`{"prompt":"p"}`, false},
		{`{"prompt":"p","model":"flash","cwd":"/tmp"}`, false},
		{`{"prompt":"set the temperature to 5"}`, false},
		{`{"prompt":"p","temperature":5}`, true},
		{`{"prompt":"p","TEMPERATURE":5}`, true},
		{`{"prompt":"p","Temperature":-1}`, true},
		{`{"prompt":"p","\u0074emperature":5}`, true},
		{`{"prompt":"p","thinking_mode":"huge"}`, true},
		{`{"prompt":"p","THINKING_MODE":"huge"}`, true},
		{"{\"prompt\":\"p\",\"thin\u212aing_mode\":\"huge\"}", decodes("{\"thin\u212aing_mode\":1}")},
		{`{"prompt":"p","thin\u212aing_mode":"huge"}`, decodes(`{"thin\u212aing_mode":1}`)},
		{`{"prompt":"p","temperatur":5}`, false},
		{`{"prompt":"p","temperature":1,"thinking_mode":"low"}`, false},
	} {
		var args map[string]json.RawMessage
		if err := json.Unmarshal([]byte(c.raw), &args); err != nil {
			t.Fatal(err)
		}
		err := checkTuning(args)
		if got := err != nil; got != c.bad {
			t.Errorf("checkTuning(%s) refused: %v, want %v", c.raw, got, c.bad)
		}
		if err != nil && !strings.Contains(err.Error(), "omit it for the model's default") {
			t.Errorf("checkTuning(%s): %v", c.raw, err)
		}
		if c.bad && !decodes(c.raw) {
			t.Errorf("%s: the case is wrong: encoding/json finds no tuning argument in it", c.raw)
		}
	}
}

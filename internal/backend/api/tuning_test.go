package api

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

func genConfig(t *testing.T, r fakeapi.Request) map[string]any {
	t.Helper()
	m := map[string]any{}
	if r.GenerationConfig != nil {
		if err := json.Unmarshal(r.GenerationConfig, &m); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

func TestTuning(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	temp := 0.25
	for i, tc := range []struct {
		model, mode string
		thinking    string // the thinkingConfig sent, as JSON; "" for none
		note        string // in NotApplied
	}{
		{"gemini-2.5-pro", "max", `{"thinkingBudget":32768}`, ""},
		{"gemini-2.5-pro", "minimal", `{"thinkingBudget":128}`, ""},
		{"gemini-2.5-flash", "medium", `{"thinkingBudget":8192}`, ""},
		{"gemini-2.5-flash", "max", `{"thinkingBudget":24576}`, "the most gemini-2.5-flash takes"},
		{"gemini-2.5-flash-lite", "minimal", `{"thinkingBudget":512}`, "the least gemini-2.5-flash-lite takes"},
		{"gemini-3-pro-preview", "max", `{"thinkingLevel":"HIGH"}`, ""},
		{"gemini-3-pro-preview", "minimal", `{"thinkingLevel":"LOW"}`, "sent as LOW"},
		{"gemini-2.0-flash", "high", "", "thinking_mode: model gemini-2.0-flash does not think"},
		{"gemini-2.5-flash", "off", `{"thinkingBudget":0}`, ""},
		{"gemini-2.5-flash-lite", "off", `{"thinkingBudget":0}`, ""},
		{"gemini-3-pro-preview", "off", `{"thinkingLevel":"LOW"}`, "off sent as LOW, the least gemini-3-pro-preview takes: Gemini 3 models cannot turn thinking off"},
		{"gemini-2.0-flash", "off", "", "thinking_mode: model gemini-2.0-flash does not think"},
	} {
		a := f.mustRun(backend.Turn{Prompt: "tune", Model: tc.model, ThinkingMode: tc.mode, Temperature: &temp})
		gc := genConfig(t, f.streams()[i])
		if gc["temperature"] != 0.25 {
			t.Errorf("%s %s: temperature %v", tc.model, tc.mode, gc["temperature"])
		}
		got := ""
		if v, ok := gc["thinkingConfig"]; ok {
			b, _ := json.Marshal(v)
			got = string(b)
		}
		if got != tc.thinking {
			t.Errorf("%s %s: thinkingConfig %s, want %s", tc.model, tc.mode, got, tc.thinking)
		}
		notes := strings.Join(a.NotApplied, "; ")
		if tc.note == "" && notes != "" || !strings.Contains(notes, tc.note) {
			t.Errorf("%s %s: NotApplied %q, want %q", tc.model, tc.mode, notes, tc.note)
		}
	}
	// No tuning asked, none sent.
	f.mustRun(backend.Turn{Prompt: "plain"})
	reqs := f.streams()
	if gc := genConfig(t, reqs[len(reqs)-1]); gc["temperature"] != nil || gc["thinkingConfig"] != nil {
		t.Errorf("untuned call sent %v", gc)
	}
	_, err := f.run(backend.Turn{Prompt: "x", ThinkingMode: "huge"})
	wantKind(t, err, backend.KindInput, 0, `thinking_mode "huge" is not one of off, minimal, low, medium, high, max`)
}

func TestThinkingOff(t *testing.T) {
	t.Parallel()
	// A Gemini 3 Flash model takes MINIMAL, its least.
	tc, note, err := thinkingConfig("off", "gemini-3-flash-preview", modelInfo{}, false)
	if err != nil || tc == nil || tc.ThinkingLevel != "MINIMAL" || !strings.Contains(note, "off sent as MINIMAL") {
		t.Errorf("gemini-3-flash-preview: %+v %q %v", tc, note, err)
	}
	// A model that cannot stop thinking is refused before any request.
	f := newFixture(t, Options{})
	_, err = f.run(backend.Turn{Prompt: "x", Model: "gemini-2.5-pro", ThinkingMode: "off"})
	wantKind(t, err, backend.KindInput, 0, "thinking_mode off: model gemini-2.5-pro cannot turn thinking off (its least thinking budget is 128 tokens)")
	if n := len(f.streams()); n != 0 {
		t.Errorf("%d requests for a refused turn", n)
	}
}

func TestIncludeThoughts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	for i, tc := range []struct {
		model, mode string
		thinking    string
		note        string
	}{
		{"gemini-2.5-flash", "", `{"includeThoughts":true}`, ""},
		{"gemini-2.5-flash", "low", `{"includeThoughts":true,"thinkingBudget":2048}`, ""},
		{"gemini-3-pro-preview", "high", `{"includeThoughts":true,"thinkingLevel":"HIGH"}`, ""},
		{"gemini-2.5-flash", "off", `{"thinkingBudget":0}`, "include_thoughts: thinking_mode off leaves no thoughts to include"},
		{"gemini-2.0-flash", "", "", "include_thoughts: model gemini-2.0-flash does not think"},
	} {
		a := f.mustRun(backend.Turn{Prompt: "think", Model: tc.model, ThinkingMode: tc.mode, IncludeThoughts: true})
		got := ""
		if v, ok := genConfig(t, f.streams()[i])["thinkingConfig"]; ok {
			b, _ := json.Marshal(v)
			got = string(b)
		}
		notes := strings.Join(a.NotApplied, "; ")
		if got != tc.thinking || tc.note == "" && notes != "" || !strings.Contains(notes, tc.note) {
			t.Errorf("%s %s: thinkingConfig %s, NotApplied %q; want %s, %q", tc.model, tc.mode, got, notes, tc.thinking, tc.note)
		}
		wantThoughts := tc.note == ""
		if (a.Thoughts == fakeapi.ThoughtSummary) != wantThoughts || strings.Contains(a.Text, fakeapi.ThoughtSummary) {
			t.Errorf("%s %s: thoughts %q, text %q", tc.model, tc.mode, a.Thoughts, a.Text)
		}
	}
}

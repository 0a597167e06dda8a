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

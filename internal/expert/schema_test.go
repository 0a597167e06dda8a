package expert

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSchemasFollowSeed checks the schemas against the expert tools' specification: its
// names, required arguments, enums and defaults.
func TestSchemasFollowSeed(t *testing.T) {
	t.Parallel()
	type want struct {
		required []string
		enums    map[string]string // argument: its values, joined by |
		defaults map[string]any
		optional []string
	}
	// The specification's modes, and "off" before them, which the API
	// backend maps onto no thinking where the model allows it.
	modes := "off|minimal|low|medium|high|max"
	seed := map[string]want{
		"thinkdeep": {required: []string{"current_analysis"}, optional: []string{"problem_context", "focus_areas", "files", "continuation_id"},
			enums: map[string]string{"thinking_mode": modes}, defaults: map[string]any{"thinking_mode": "high"}},
		"analyze": {required: []string{"files", "question"}, optional: []string{"continuation_id"},
			enums:    map[string]string{"analysis_type": "architecture|performance|security|quality|general", "thinking_mode": modes},
			defaults: map[string]any{"analysis_type": "general", "thinking_mode": "medium"}},
		"codereview": {required: []string{"files", "context"}, optional: []string{"standards"},
			enums:    map[string]string{"review_type": "full|security|performance|quick", "severity_filter": "critical|high|medium|all"},
			defaults: map[string]any{"review_type": "full", "severity_filter": "all", "thinking_mode": "medium"}},
		"debug": {required: []string{"error_description"}, optional: []string{"error_context", "files", "previous_attempts", "runtime_info"},
			defaults: map[string]any{"thinking_mode": "medium"}},
		"precommit": {required: []string{"path"}, optional: []string{"original_request"},
			enums:    map[string]string{"review_type": "full|security|performance|quick"},
			defaults: map[string]any{"include_staged": true, "include_unstaged": true, "review_type": "full", "thinking_mode": "medium"}},
	}
	for name, w := range seed {
		sc := specByName(name).schema()
		if strings.Join(sc.Required, ",") != strings.Join(w.required, ",") {
			t.Errorf("%s: required %v, want %v", name, sc.Required, w.required)
		}
		for _, o := range w.optional {
			if sc.Properties[o] == nil {
				t.Errorf("%s: no %s", name, o)
			}
		}
		for arg, values := range w.enums {
			var got []string
			for _, e := range sc.Properties[arg].Enum {
				got = append(got, e.(string))
			}
			if strings.Join(got, "|") != values {
				t.Errorf("%s.%s: enum %v, want %s", name, arg, got, values)
			}
		}
		for arg, def := range w.defaults {
			want, _ := json.Marshal(def)
			if got := sc.Properties[arg].Default; string(got) != string(want) {
				t.Errorf("%s.%s: default %s, want %s", name, arg, got, want)
			}
		}
	}
}

func TestPromptsListed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "api", nil)
	res, err := h.client.ListPrompts(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Prompt{}
	for _, p := range res.Prompts {
		byName[p.Name] = p
	}
	for _, tool := range all {
		name := tool.name
		p := byName[name]
		if p == nil {
			t.Fatalf("no prompt %s", name)
		}
		var req []string
		for _, a := range p.Arguments {
			if a.Required {
				req = append(req, a.Name)
			}
		}
		if strings.Join(req, ",") != strings.Join(specByName(name).schema().Required, ",") {
			t.Errorf("%s: required arguments %v", name, req)
		}
	}
	got, err := h.client.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "analyze",
		Arguments: map[string]string{"files": "main.go, internal/", "question": "What is it?", "analysis_type": "architecture"}})
	if err != nil {
		t.Fatal(err)
	}
	text := got.Messages[0].Content.(*mcp.TextContent).Text
	for _, want := range []string{"Call the analyze tool", `"main.go",`, `"internal/"`, `"analysis_type": "architecture"`} {
		if !strings.Contains(text, want) {
			t.Errorf("prompt text lacks %s:\n%s", want, text)
		}
	}
	_, err = h.client.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "analyze", Arguments: map[string]string{"files": "a.go"}})
	if we := wireErr(t, err); we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(string(we.Data), `"question"`) {
		t.Errorf("missing question: %d %s", we.Code, we.Data)
	}
}

// TestInputStructsMatchSchemas: each tool's input struct has a field for
// each property of its schema and no other, so that every argument the
// schema admits reaches the handler; a number has a range, which the
// schema check reads.
func TestInputStructsMatchSchemas(t *testing.T) {
	t.Parallel()
	for _, tool := range all {
		sc := tool.schema()
		var fields []string
		var walk func(reflect.Type)
		walk = func(rt reflect.Type) {
			for f := range rt.Fields() {
				if f.Anonymous {
					walk(f.Type)
					continue
				}
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				fields = append(fields, name)
			}
		}
		walk(reflect.TypeOf(tool.input()).Elem())
		if got, want := slices.Sorted(slices.Values(fields)), slices.Sorted(slices.Values(sc.PropertyOrder)); !slices.Equal(got, want) {
			t.Errorf("%s: the input struct has %v, the schema %v", tool.name, got, want)
		}
		for name, p := range sc.Properties {
			if p.Type == "number" && (p.Minimum == nil || p.Maximum == nil) {
				t.Errorf("%s.%s: a number without a range", tool.name, name)
			}
		}
	}
}

package expert

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
)

const review = `Summary of the review.

- [CRITICAL] app.go:12: the token is logged; drop it from the log line.
* **[High]** db.go:40: the query is built by concatenation; use a placeholder.
[MEDIUM] util.go:3: an unused import.
Not an issue: [LOW] in the middle of a line.
- [LOW] README.md:1: a typo.

**Verdict:** NO-GO — the token leak must be fixed first.
`

func TestIssuesAndVerdict(t *testing.T) {
	t.Parallel()
	want := []Issue{
		{"critical", "app.go:12: the token is logged; drop it from the log line."},
		{"high", "db.go:40: the query is built by concatenation; use a placeholder."},
		{"medium", "util.go:3: an unused import."},
		{"low", "README.md:1: a typo."},
	}
	if got := issues(review); !reflect.DeepEqual(got, want) {
		t.Errorf("issues = %+v, want %+v", got, want)
	}
	for text, want := range map[string][2]string{
		review:                                 {"no-go", "the token leak must be fixed first."},
		"ok\nVERDICT: GO\n":                    {"go", ""},
		"VERDICT: NO-GO: x\n## Verdict: GO, y": {"go", "y"},
		"GO or NO-GO, I cannot say":            {"unknown", ""},
		"the verdict: going well":              {"unknown", ""},
	} {
		v, reason := verdict(text)
		if v != want[0] || reason != want[1] {
			t.Errorf("verdict(%q) = %q %q, want %q %q", text, v, reason, want[0], want[1])
		}
	}
}

// conforms checks a structured content against a tool's outputSchema, as
// a client that validates them does.
func conforms(t *testing.T, tool *mcp.Tool, sc any) {
	t.Helper()
	raw, err := json.Marshal(tool.OutputSchema)
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("%s's outputSchema: %v", tool.Name, err)
	}
	b, _ := json.Marshal(sc)
	var v any
	_ = json.Unmarshal(b, &v)
	if err := rs.Validate(v); err != nil {
		t.Errorf("%s's structured content %s does not conform: %v", tool.Name, b, err)
	}
}

func TestStructuredContentConforms(t *testing.T) {
	t.Parallel()
	for _, text := range []string{review, "fake answer with no issue and no verdict", ""} {
		for _, secrets := range [][]string{nil, {"aws-access-key-id AKIA…"}} {
			o := &output{answer: &backend.Answer{Text: text}, secrets: secrets, processed: []filectx.FileNote{}}
			p := precommitStructured(o)
			conforms(t, Precommit.tool(), p)
			conforms(t, Codereview.tool(), codereviewStructured(o))
			if len(secrets) > 0 && (p["verdict"] != "no-go" || p["verdictBy"] != "server") {
				t.Errorf("with secrets: verdict %v by %v", p["verdict"], p["verdictBy"])
			}
		}
	}
	o := &output{answer: &backend.Answer{Text: review}}
	got := codereviewStructured(o)["issues"].(map[string][]string)
	if len(got["critical"]) != 1 || len(got["high"]) != 1 || len(got["medium"]) != 1 || len(got["low"]) != 1 {
		t.Errorf("issues by severity %v", got)
	}
	for _, tool := range []*Tool{Thinkdeep, Analyze, Debug} {
		if tool.tool().OutputSchema != nil {
			t.Errorf("%s declares an outputSchema, but its answers have no one shape", tool.name)
		}
	}
}

func TestPrecommitResultStructured(t *testing.T) {
	t.Parallel()
	h := newHarness(t, "oneshot", func(d *Deps) {
		d.Files = &fakeFiles{changes: func(context.Context, string, bool, bool) (*filectx.ChangeSet, error) {
			return &filectx.ChangeSet{Text: "diff", Processed: []filectx.FileNote{{Path: "x.go"}}}, nil
		}}
	})
	res, err := h.call(t, "precommit", map[string]any{"path": "repo"})
	if err != nil || res.IsError {
		t.Fatalf("precommit: %v %+v", err, res)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if sc["verdict"] != "unknown" {
		t.Errorf("structured content %v", res.StructuredContent)
	}
	// The answer is in the text alone, not a second time here.
	if _, ok := sc["answer"]; ok {
		t.Errorf("the structured content repeats the answer: %v", res.StructuredContent)
	}
}

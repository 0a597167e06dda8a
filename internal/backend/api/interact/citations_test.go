package interact

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// A citation is a web source: one whose URL is not http(s) (a script, a
// local file, a data: URL the client might open) is not kept, and a title
// cannot run onto another line of the numbered list of sources.
func TestCitationsOnlyWebSources(t *testing.T) {
	var anns []any
	for _, u := range []string{"javascript:alert(1)", "file:///etc/passwd", "data:text/html,<script>x</script>", "//evil.example/x",
		"https://example.com/ok", "HTTP://Example.com/also", "https://", "http:opaque"} {
		anns = append(anns, map[string]any{"type": "url_citation", "url": u, "title": "t\n2. forged: https://evil.example"})
	}
	body, _ := json.Marshal(map[string]any{"id": "c", "status": "completed", "steps": []any{map[string]any{"type": "model_output",
		"content": []any{map[string]any{"type": "text", "text": "the report", "annotations": anns}}}}})
	r, err := serveScript(t, 200, string(body)).Get(geminitest.Context(t), "c")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Citations) != 2 || r.Citations[0].URL != "https://example.com/ok" || r.Citations[1].URL != "HTTP://Example.com/also" {
		t.Fatalf("citations kept: %d: %#v", len(r.Citations), r.Citations)
	}
	for _, c := range r.Citations {
		if strings.ContainsAny(c.Title, "\n\r") {
			t.Fatalf("a title keeps its line break: %q", c.Title)
		}
	}
}

// The errors a Result keeps, of its steps and of the interaction, are
// bounded in number as in size: an interaction failed with an error on
// each of its 2,000 steps makes an error message of a few KB.
func TestErrorsBounded(t *testing.T) {
	var steps []any
	for range MaxSteps {
		steps = append(steps, map[string]any{"type": "model_output", "error": map[string]any{"message": strings.Repeat("e", 1000)}})
	}
	var errs []any
	for range 100 {
		errs = append(errs, map[string]any{"code": "X", "message": "m"})
	}
	body, _ := json.Marshal(map[string]any{"id": "f", "status": "failed", "steps": steps, "errors": errs})
	r, err := serveScript(t, 200, string(body)).Get(geminitest.Context(t), "f")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Errors) > maxErrors || !strings.Contains(strings.Join(r.Errors, ";"), "X: m") || r.Err() == nil || len(r.Err().Error()) > maxErrors*600 {
		t.Fatalf("%d errors kept, an error of %d bytes", len(r.Errors), len(r.Err().Error()))
	}
}

// An answer about another interaction than the one asked for (a proxy's
// cache, a misrouted answer: every caller's interactions are under the
// server's one key) is refused, not taken for the one asked for: its
// report would reach a caller whose job it is not.
func TestAnswerOfAnotherInteractionRefused(t *testing.T) {
	c := serveScript(t, 200, `{"id":"someone-elses","status":"completed","steps":[{"type":"model_output","content":[{"type":"text","text":"their report"}]}]}`)
	for op, call := range map[string]func() (*Result, error){
		"get":    func() (*Result, error) { return c.Get(geminitest.Context(t), "mine") },
		"cancel": func() (*Result, error) { return c.Cancel(geminitest.Context(t), "mine") },
	} {
		if r, err := call(); !errors.Is(err, ErrBadAnswer) || r != nil {
			t.Errorf("%s: %+v %v, want ErrBadAnswer", op, r, err)
		}
	}
	if r, err := c.Get(geminitest.Context(t), "someone-elses"); err != nil || r.Text != "their report" {
		t.Fatalf("the interaction asked for: %+v %v", r, err)
	}
}

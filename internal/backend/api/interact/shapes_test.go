package interact

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// Answers shaped to cost the most within MaxResponseBytes: JSON nested
// as deep as the bytes allow, sixty thousand tiny steps of a type the
// SDK does not know, and as many outputs with a citation each. Each is
// read (or refused) at once, within the Result's bounds.
func TestCostlyShapesBounded(t *testing.T) {
	nested := `{"id":"n","status":"completed","steps":[` + strings.Repeat(`{"type":"model_output","content":[`, 200000) + `]}`
	var unknown, outputs strings.Builder
	unknown.WriteString(`{"id":"u","status":"in_progress","steps":[`)
	outputs.WriteString(`{"id":"o","status":"completed","steps":[`)
	for i := range 60000 {
		if i > 0 {
			unknown.WriteString(",")
			outputs.WriteString(",")
		}
		unknown.WriteString(`{"type":"a_step_from_the_future","x":1}`)
		outputs.WriteString(`{"type":"model_output","content":[{"type":"text","text":"a","annotations":[{"type":"url_citation","url":"https://e.x/"}]}]}`)
	}
	unknown.WriteString(`]}`)
	outputs.WriteString(`]}`)
	for name, body := range map[string]string{"nested": nested, "unknown steps": unknown.String(), "outputs": outputs.String()} {
		if len(body) > MaxResponseBytes {
			t.Fatalf("%s: the answer is %d bytes, over the cap: it tests only the cap", name, len(body))
		}
		start := time.Now()
		r, err := serveScript(t, 200, body).Get(geminitest.Context(t), map[string]string{"nested": "n", "unknown steps": "u", "outputs": "o"}[name])
		took := time.Since(start)
		switch name {
		case "nested":
			if !errors.Is(err, ErrBadAnswer) {
				t.Errorf("nested: %v, want ErrBadAnswer", err)
			}
		case "unknown steps":
			if err != nil || r.Text != "" || r.Status.Done() || !r.Truncated {
				t.Errorf("unknown steps: %+v %v", r, err)
			}
		case "outputs":
			if err != nil || len(r.Text) != MaxSteps || len(r.Citations) != MaxCitations || !r.Truncated {
				t.Errorf("outputs: %d bytes of text, %d citations, truncated %v, %v", len(r.Text), len(r.Citations), r != nil && r.Truncated, err)
			}
		}
		t.Logf("%s: %d bytes read in %v", name, len(body), took)
	}
}

package api

import (
	"strings"
	"testing"

	"google.golang.org/genai"
)

// What the API names beside the code and its output (the language, the
// outcome, an inline part's type) is its word, not the model's text: a
// language or outcome that would end the fenced block or run for a
// megabyte is not written as it came, and an inline part of a type no
// client should render as a picture (SVG, which may hold script; a type
// with a newline) is left out rather than returned as image content.
func TestExtrasHostileNames(t *testing.T) {
	t.Parallel()
	var x extras
	var text strings.Builder
	x.code(&genai.Part{ExecutableCode: &genai.ExecutableCode{Language: "python\n```\n# forged", Code: "print(1)"}}, &text)
	x.code(&genai.Part{CodeExecutionResult: &genai.CodeExecutionResult{Outcome: genai.Outcome("X\n" + strings.Repeat("y", 1<<20)), Output: "1"}}, &text)
	for _, mime := range []string{"image/svg+xml", "image/png\n\n# forged", "image/" + strings.Repeat("p", 1<<20)} {
		x.inline(&genai.Blob{MIMEType: mime, Data: []byte("<svg onload=alert(1)>")}, &text)
	}
	x.inline(&genai.Blob{MIMEType: "IMAGE/PNG", Data: []byte{1}}, &text)
	s := text.String()
	if strings.Contains(s, "\n# forged") || len(s) > 4000 {
		t.Fatalf("the text holds what the API named as it came (%d bytes): %.600q", len(s), s)
	}
	if len(x.images) != 1 || x.images[0].MIMEType != "image/png" {
		t.Fatalf("images returned: %d (%+v)", len(x.images), x.images)
	}
	for _, r := range x.runs {
		if strings.Contains(r.Language, "\n") || len(r.Outcome) > 100 {
			t.Fatalf("a run in _meta keeps the API's names as they came: %.200q", r)
		}
	}
}

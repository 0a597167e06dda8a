package api

import (
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

func TestExtrasRendering(t *testing.T) {
	t.Parallel()
	var x extras
	var text strings.Builder
	text.WriteString("Here:")
	// Code holding a fence gets a longer one.
	x.code(&genai.Part{ExecutableCode: &genai.ExecutableCode{Language: genai.LanguagePython, Code: "s = '```'"}}, &text)
	x.code(&genai.Part{CodeExecutionResult: &genai.CodeExecutionResult{Outcome: "OUTCOME_NEW", Output: "x"}}, &text)
	// A result with no code before it is kept.
	x.code(&genai.Part{CodeExecutionResult: &genai.CodeExecutionResult{Outcome: genai.OutcomeOK}}, &text)
	// Output that is not an image is left out, and said so.
	x.inline(&genai.Blob{MIMEType: "text/csv", Data: []byte("a,b")}, &text)
	want := "Here:\n\n````python\ns = '```'\n````\n\nCode execution: unknown (OUTCOME_NEW)\n```\nx\n```\n\n" +
		"Code execution: ok (no output)\n\n[gemini-mcp-server: output of type \"text/csv\" (3 bytes) was left out]\n\n"
	if text.String() != want {
		t.Errorf("text\n%q\nwant\n%q", text.String(), want)
	}
	if len(x.runs) != 2 || x.runs[0].Outcome != "OUTCOME_NEW" || x.runs[1].Code != "" || x.runs[1].Outcome != "OUTCOME_OK" || len(x.images) != 0 {
		t.Errorf("runs %+v, images %d", x.runs, len(x.images))
	}
	// Images beyond the cap are left out, and said so.
	for range maxImagesPerAnswer + 1 {
		x.inline(&genai.Blob{MIMEType: "image/png", Data: []byte{1}}, &text)
	}
	if len(x.images) != maxImagesPerAnswer || !strings.HasSuffix(text.String(), "over 16 images in one answer]\n\n") {
		t.Errorf("%d images; text ends %q", len(x.images), text.String()[text.Len()-80:])
	}
}

// What the result carries beside the paged text is bounded: a run's code
// and output in _meta, the thoughts.
func TestExtrasBounds(t *testing.T) {
	t.Parallel()
	var x extras
	var text strings.Builder
	big := strings.Repeat("x", maxMetaCodeBytes+10)
	x.code(&genai.Part{ExecutableCode: &genai.ExecutableCode{Language: genai.LanguagePython, Code: big}}, &text)
	x.code(&genai.Part{CodeExecutionResult: &genai.CodeExecutionResult{Outcome: genai.OutcomeOK, Output: big}}, &text)
	if r := x.runs[0]; len(r.Code) > maxMetaCodeBytes+100 || len(r.Output) > maxMetaCodeBytes+100 ||
		!strings.Contains(r.Code, "the answer's text has it whole") || strings.Count(text.String(), big) != 2 {
		t.Errorf("code %d bytes, output %d bytes in _meta; text %d bytes", len(r.Code), len(r.Output), text.Len())
	}
	for range 3 {
		x.thought(strings.Repeat("t", maxThoughtBytes/2))
	}
	if th := x.thoughtsText(); len(th) > maxThoughtBytes+200 || !strings.HasSuffix(th, "this server's cap]") {
		t.Errorf("thoughts of %d bytes end %q", len(th), th[len(th)-40:])
	}
}

// On a model that signs its answers (Gemini 3), a turn with code goes on:
// the code parts and signatures go back as they came.
func TestCodeExecutionSignedHistory(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	const model = "gemini-3-pro-preview"
	a := f.mustRun(backend.Turn{Prompt: "run [[code:OK]]", Model: model, Builtins: backend.Builtins{CodeExecution: true}})
	if len(a.CodeRuns) != 1 || a.CodeRuns[0].Outcome != "OUTCOME_OK" || !strings.Contains(a.Text, "```python\n"+fakeapi.CodeFor("OK")) {
		t.Fatalf("answer %q, runs %+v", a.Text, a.CodeRuns)
	}
	b := f.mustRun(backend.Turn{Prompt: "again", Session: a.SessionID})
	if b.Text == "" {
		t.Fatal("no answer to the reply")
	}
	streams := f.streams()
	body := string(streams[len(streams)-1].Body)
	for _, want := range []string{`"executableCode"`, `"codeExecutionResult"`, `"thoughtSignature"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the reply's request has no %s: %s", want, body)
		}
	}
}

// A turn that goes to the fallback model (an exhausted quota) still asks
// for the thoughts and code execution, and returns them.
func TestFallbackKeepsThoughtsAndCode(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{FallbackModel: "flash"})
	f.fake.ExhaustQuota("gemini-2.5-pro", &fakeapi.Quota{Daily: true, RetryDelay: "0.01s"})
	a := f.mustRun(backend.Turn{Prompt: "run [[code:OK]]", Model: "pro", ThinkingMode: "high", IncludeThoughts: true,
		Builtins: backend.Builtins{CodeExecution: true}})
	if a.FallbackFrom != "gemini-2.5-pro" {
		t.Fatalf("no fallback: answered by %q", a.Model)
	}
	if a.Thoughts != fakeapi.ThoughtSummary || len(a.CodeRuns) != 1 || len(a.NotApplied) != 0 {
		t.Errorf("thoughts %q, runs %+v, notes %q", a.Thoughts, a.CodeRuns, a.NotApplied)
	}
}

package fakeapi

import (
	"bytes"
	"net/http"
	"testing"

	"google.golang.org/genai"
)

// The code execution parts, images and thought parts the Server sends
// decode into the SDK's own types, with each outcome.
func TestCodeExecutionThroughSDK(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	c := sdkClient(t, s)
	cfg := &genai.GenerateContentConfig{Tools: []*genai.Tool{{CodeExecution: &genai.ToolCodeExecution{}}}}
	for _, tc := range []struct {
		directive string
		outcome   genai.Outcome
	}{
		{"OK", genai.OutcomeOK},
		{"FAILED", genai.OutcomeFailed},
		{"DEADLINE_EXCEEDED", genai.OutcomeDeadlineExceeded},
	} {
		prompt := genai.NewContentFromText("compute [[code:"+tc.directive+"]] [[code-image]]", genai.RoleUser)
		events, err := streamParts(t, c, "gemini-2.5-flash", []*genai.Content{prompt}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		var parts []*genai.Part
		for _, e := range events {
			parts = append(parts, e...)
		}
		if len(parts) != 5 {
			t.Fatalf("%s: %d parts, want 5: %v", tc.directive, len(parts), parts)
		}
		if parts[0].Text != CodeIntro {
			t.Errorf("%s: first part %+v", tc.directive, parts[0])
		}
		if ec := parts[1].ExecutableCode; ec == nil || ec.Language != genai.LanguagePython || ec.Code != CodeFor(tc.directive) {
			t.Errorf("%s: executableCode %+v", tc.directive, ec)
		}
		if r := parts[2].CodeExecutionResult; r == nil || r.Outcome != tc.outcome || r.Output != CodeOutput(tc.directive) {
			t.Errorf("%s: codeExecutionResult %+v", tc.directive, r)
		}
		if d := parts[3].InlineData; d == nil || d.MIMEType != "image/png" || len(CodeImage) == 0 || !bytes.Equal(d.Data, CodeImage) {
			t.Errorf("%s: inlineData %+v", tc.directive, d)
		}
		if parts[4].Text == "" {
			t.Errorf("%s: no answer text after the code", tc.directive)
		}
	}

	// Without the tool, the model cannot run code: plain text.
	prompt := genai.NewContentFromText("compute [[code:OK]]", genai.RoleUser)
	events, err := streamParts(t, c, "gemini-2.5-flash", []*genai.Content{prompt}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		for _, p := range e {
			if p.ExecutableCode != nil || p.CodeExecutionResult != nil {
				t.Errorf("code parts without the codeExecution tool: %+v", p)
			}
		}
	}
	reqs := s.Requests()
	if len(reqs) != 4 || !reqs[0].CodeExecution() || reqs[3].CodeExecution() {
		t.Errorf("requests' codeExecution: %d requests", len(reqs))
	}
}

func TestThoughtsThroughSDK(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	c := sdkClient(t, s)
	prompt := []*genai.Content{genai.NewContentFromText("think", genai.RoleUser)}

	var thoughts, text string
	var usage *genai.GenerateContentResponseUsageMetadata
	cfg := &genai.GenerateContentConfig{ThinkingConfig: &genai.ThinkingConfig{IncludeThoughts: true}}
	for r, err := range c.Models.GenerateContentStream(testCtx(t), "gemini-2.5-flash", prompt, cfg) {
		if err != nil {
			t.Fatal(err)
		}
		if r.UsageMetadata != nil {
			usage = r.UsageMetadata
		}
		for _, p := range r.Candidates[0].Content.Parts {
			if p.Thought {
				thoughts += p.Text
			} else {
				text += p.Text
			}
		}
	}
	if thoughts != ThoughtSummary || text == "" || usage == nil || usage.ThoughtsTokenCount != ThoughtTokens {
		t.Errorf("thoughts %q, text %q, usage %+v", thoughts, text, usage)
	}

	// Thinking off: no thoughts, no thought tokens; refused on a model
	// that only works in thinking mode.
	off := &genai.GenerateContentConfig{ThinkingConfig: &genai.ThinkingConfig{IncludeThoughts: true, ThinkingBudget: genai.Ptr[int32](0)}}
	events, err := streamParts(t, c, "gemini-2.5-flash", prompt, off)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		for _, p := range e {
			if p.Thought {
				t.Errorf("a thought with thinking off: %+v", p)
			}
		}
	}
	_, err = streamParts(t, c, "gemini-2.5-pro", prompt, off)
	if code, msg := apiCode(err); code != http.StatusBadRequest || msg != NoThinkingOffMessage {
		t.Errorf("thinking off on gemini-2.5-pro: %d %q", code, msg)
	}
}

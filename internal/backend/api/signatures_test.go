package api

import (
	"bytes"
	"encoding/json"
	"testing"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// signed counts the model contents of a request and those whose parts
// carry a thought signature the fake gave; calls counts the model
// contents with function calls, signedCalls those whose first call is
// signed.
func signed(t *testing.T, r fakeapi.Request) (models, withSig, calls, signedCalls int) {
	t.Helper()
	var body struct{ Contents []*genai.Content }
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	for _, c := range body.Contents {
		if c.Role != genai.RoleModel {
			continue
		}
		models++
		sig, call, first := false, false, true
		for _, p := range c.Parts {
			if bytes.HasPrefix(p.ThoughtSignature, []byte(fakeapi.SignaturePrefix)) {
				sig = true
			}
			if p.FunctionCall != nil && first {
				first, call = false, true
				if p.ThoughtSignature != nil {
					signedCalls++
				}
			}
		}
		if sig {
			withSig++
		}
		if call {
			calls++
		}
	}
	return
}

// TestGemini3ThoughtSignaturesKept: a three-turn thread of tool calls on a
// Gemini 3 model. Every signature the model gave, on its function calls
// and on the empty text part that ends its streamed text answers, goes
// back with every later request, across turns and a restart; the fake,
// which refuses a function call without its signature, answers them all.
func TestGemini3ThoughtSignaturesKept(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, true)
	f := newFixture(t, Options{Tools: h, Model: "gemini-3-pro-preview"})
	a := f.mustRun(backend.Turn{Prompt: `one [[call:mcp_demo_echo:{"text":"a"}]] [[call:mcp_demo_echo:{"text":"b"}]]`})
	f.restart(Options{Tools: h, Model: "gemini-3-pro-preview"})
	f.mustRun(backend.Turn{Prompt: `two [[call:mcp_demo_echo:{"text":"c"}]] [[then-call:mcp_demo_echo:{"text":"d"}]]`, Session: a.SessionID})
	f.mustRun(backend.Turn{Prompt: "three, no call", Session: a.SessionID})

	reqs := f.streams()
	for _, r := range reqs {
		if r.Status != 200 {
			t.Fatalf("the fake answered %d: %s", r.Status, r.Answer)
		}
	}
	if len(reqs) != 6 {
		t.Fatalf("%d requests, want 6 (2 + 3 + 1)", len(reqs))
	}
	last := reqs[len(reqs)-1]
	// prompt, call, results, answer; prompt, call, results, call, results, answer; prompt
	if last.NumContents != 11 {
		t.Fatalf("the last request sent %d contents, want 11", last.NumContents)
	}
	models, withSig, calls, signedCalls := signed(t, last)
	if models != 5 || withSig != 5 || calls != 3 || signedCalls != 3 {
		t.Errorf("the last request's model contents: %d, %d with a signature, %d with calls, %d of them signed; want 5, 5, 3, 3",
			models, withSig, calls, signedCalls)
	}
}

func TestAnswerParts(t *testing.T) {
	t.Parallel()
	sig := func(s string) []byte { return []byte(s) }
	call := &genai.Part{FunctionCall: &genai.FunctionCall{Name: "f"}, ThoughtSignature: sig("c")}
	for _, c := range []struct {
		name string
		in   []*genai.Part
		want string
	}{
		{"text merged", []*genai.Part{{Text: "a"}, {Text: "b"}}, `[{"text":"ab"}]`},
		{"empty signed part ends the text", []*genai.Part{{Text: "a"}, {Text: "b"}, {ThoughtSignature: sig("s")}},
			`[{"text":"ab","thoughtSignature":"cw=="}]`},
		{"signed text part", []*genai.Part{{Text: "a", ThoughtSignature: sig("s")}, {Text: "b"}},
			`[{"text":"a","thoughtSignature":"cw=="},{"text":"b"}]`},
		{"signature after a signed text", []*genai.Part{{Text: "a", ThoughtSignature: sig("s")}, {ThoughtSignature: sig("t")}},
			`[{"text":"a","thoughtSignature":"cw=="}]`},
		{"text then calls", []*genai.Part{{Text: "a"}, call, {FunctionCall: &genai.FunctionCall{Name: "g"}}},
			`[{"text":"a"},{"functionCall":{"name":"f"},"thoughtSignature":"Yw=="},{"functionCall":{"name":"g"}}]`},
		{"signature after a call has no part to go on", []*genai.Part{call, {ThoughtSignature: sig("s")}},
			`[{"functionCall":{"name":"f"},"thoughtSignature":"Yw=="}]`},
	} {
		var a answerParts
		for _, p := range c.in {
			a.add(p)
		}
		b, _ := json.Marshal(a.done())
		if string(b) != c.want {
			t.Errorf("%s: %s, want %s", c.name, b, c.want)
		}
	}
}

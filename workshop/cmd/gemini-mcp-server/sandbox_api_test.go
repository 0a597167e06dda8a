package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/render"
)

// The tests here run the server with the API backend on the fake Gemini
// API for code execution (code_execution), thought summaries
// (include_thoughts) and thinking turned off (thinking_mode off).

// codeRun is an entry of _meta.codeExecution.
type codeRun struct{ Language, Code, Outcome, Output string }

// lastTurn is the last turn request the fake API answered.
func lastTurn(t *testing.T, api *fakeapi.Server) fakeapi.Request {
	t.Helper()
	reqs := api.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].Method == fakeapi.MethodStream {
			return reqs[i]
		}
	}
	t.Fatal("no turn reached the fake API")
	return fakeapi.Request{}
}

func TestChatCodeExecution(t *testing.T) {
	h := newHostEnv(t, map[string]any{})
	cs := h.stdio(t, nil, "")
	res, err := callTool(cs, "chat", map[string]any{"prompt": "what is 6*7? [[code:OK]] [[code-image]]", "code_execution": true})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %s", err, resultText(res))
	}
	if !lastTurn(t, h.api).CodeExecution() {
		t.Error("the request did not offer codeExecution")
	}
	// The code and its result in order with the prose.
	text := resultText(res)
	want := fakeapi.CodeIntro + "\n\n```python\n" + fakeapi.CodeFor("OK") + "\n```\n\nCode execution: ok\n```\n" +
		fakeapi.CodeOutput("OK") + "```\n\n[image 1: image/png, "
	if !strings.HasPrefix(text, want) || !strings.Contains(text, "returned as image content]\n\nfake-api answer:") {
		t.Errorf("answer text %q, want it to start with %q", text, want)
	}
	var images int
	for _, c := range res.Content {
		if im, ok := c.(*mcp.ImageContent); ok {
			images++
			if im.MIMEType != "image/png" || !bytes.Equal(im.Data, fakeapi.CodeImage) {
				t.Errorf("image %s of %d bytes", im.MIMEType, len(im.Data))
			}
		}
	}
	if images != 1 {
		t.Errorf("%d image items, want 1", images)
	}
	var runs []codeRun
	metaOf(t, res, "codeExecution", &runs)
	if len(runs) != 1 || runs[0] != (codeRun{"python", fakeapi.CodeFor("OK"), "OUTCOME_OK", fakeapi.CodeOutput("OK")}) {
		t.Errorf("_meta.codeExecution = %+v", runs)
	}

	// The next turn sends the code and its result back as Gemini sent
	// them, and not the image.
	id, _ := res.Meta["sessionId"].(string)
	res, err = callTool(cs, "chat-reply", map[string]any{"prompt": "and 7*8?", "sessionId": id})
	if err != nil || res.IsError {
		t.Fatalf("chat-reply: %v %s", err, resultText(res))
	}
	var body struct {
		Contents []struct {
			Role  string
			Parts []map[string]json.RawMessage
		}
	}
	if err := json.Unmarshal(lastTurn(t, h.api).Body, &body); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, c := range body.Contents {
		if c.Role != "model" {
			continue
		}
		for _, p := range c.Parts {
			for k := range p {
				if k != "thoughtSignature" {
					kinds = append(kinds, k)
				}
			}
		}
	}
	if got := strings.Join(kinds, ","); got != "text,executableCode,codeExecutionResult,text" {
		t.Errorf("the model turn resent as parts %s", got)
	}
	if res.Meta["codeExecution"] != nil {
		t.Errorf("a turn without code has _meta.codeExecution %v", res.Meta["codeExecution"])
	}
}

func TestChatCodeExecutionFails(t *testing.T) {
	h := newHostEnv(t, map[string]any{})
	cs := h.stdio(t, nil, "")
	for _, tc := range []struct{ directive, says, outcome string }{
		{"FAILED", "Code execution: failed\n```\n" + fakeapi.CodeOutput("FAILED") + "```", "OUTCOME_FAILED"},
		{"DEADLINE_EXCEEDED", "Code execution: deadline exceeded (the code ran out of time in the sandbox) (no output)", "OUTCOME_DEADLINE_EXCEEDED"},
	} {
		res, err := callTool(cs, "chat", map[string]any{"prompt": "run it [[code:" + tc.directive + "]]", "code_execution": true})
		if err != nil || res.IsError {
			t.Fatalf("chat: %v %s", err, resultText(res))
		}
		if text := resultText(res); !strings.Contains(text, "```python\n"+fakeapi.CodeFor(tc.directive)+"\n```") || !strings.Contains(text, tc.says) {
			t.Errorf("%s: answer text %q, want %q", tc.directive, text, tc.says)
		}
		var runs []codeRun
		metaOf(t, res, "codeExecution", &runs)
		if len(runs) != 1 || runs[0].Outcome != tc.outcome || runs[0].Output != fakeapi.CodeOutput(tc.directive) {
			t.Errorf("%s: _meta.codeExecution = %+v", tc.directive, runs)
		}
	}
	// Without code_execution the model cannot run code: no code, no
	// tool in the request.
	res, err := callTool(cs, "chat", map[string]any{"prompt": "run it [[code:OK]]"})
	if err != nil || res.IsError || res.Meta["codeExecution"] != nil || strings.Contains(resultText(res), "```") {
		t.Errorf("chat without code_execution: %v %s", err, resultText(res))
	}
	if lastTurn(t, h.api).CodeExecution() {
		t.Error("a chat without code_execution offered codeExecution")
	}
}

func TestChatThoughts(t *testing.T) {
	h := newHostEnv(t, map[string]any{})
	cs := h.stdio(t, nil, "")
	res, err := callTool(cs, "chat", map[string]any{"prompt": "think it over", "include_thoughts": true})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %s", err, resultText(res))
	}
	if !lastTurn(t, h.api).IncludeThoughts() {
		t.Error("the request did not ask for thoughts")
	}
	// The answer's text is the answer alone; the thoughts come apart.
	if text := resultText(res); text != lastTurn(t, h.api).Answer {
		t.Errorf("answer text %q, want the model's answer %q", text, lastTurn(t, h.api).Answer)
	}
	var items []string
	for _, c := range res.Content[1:] {
		if tc, ok := c.(*mcp.TextContent); ok && strings.HasPrefix(tc.Text, render.ThoughtsHeading) {
			items = append(items, strings.TrimPrefix(tc.Text, render.ThoughtsHeading))
		}
	}
	if len(items) != 1 || items[0] != fakeapi.ThoughtSummary || res.Meta["thoughts"] != fakeapi.ThoughtSummary {
		t.Errorf("thought items %q, _meta.thoughts %v", items, res.Meta["thoughts"])
	}
	var u struct{ ThinkingTokens int }
	metaOf(t, res, "usage", &u)
	if u.ThinkingTokens != fakeapi.ThoughtTokens {
		t.Errorf("_meta.usage.thinkingTokens = %d, want %d", u.ThinkingTokens, fakeapi.ThoughtTokens)
	}

	// The thoughts are not the model's turn: the reply sends none back.
	id, _ := res.Meta["sessionId"].(string)
	if res, err = callTool(cs, "chat-reply", map[string]any{"prompt": "go on", "sessionId": id}); err != nil || res.IsError {
		t.Fatalf("chat-reply: %v %s", err, resultText(res))
	}
	r := lastTurn(t, h.api)
	if r.NumContents != 3 || bytes.Contains(r.Body, []byte(fakeapi.ThoughtSummary)) || bytes.Contains(r.Body, []byte(`"thought":true`)) {
		t.Errorf("the reply's request (%d contents) sent the thoughts back: %s", r.NumContents, r.Body)
	}
	if res.Meta["thoughts"] != nil {
		t.Errorf("a reply without include_thoughts has _meta.thoughts %v", res.Meta["thoughts"])
	}
}

func TestChatThinkingOff(t *testing.T) {
	h := newHostEnv(t, map[string]any{})
	cs := h.stdio(t, nil, "")
	thinkingConfig := func() string {
		var gc struct{ ThinkingConfig json.RawMessage }
		_ = json.Unmarshal(lastTurn(t, h.api).GenerationConfig, &gc)
		return string(gc.ThinkingConfig)
	}

	// A budget model that can stop thinking: a budget of 0.
	res, err := callTool(cs, "chat", map[string]any{"prompt": "quick", "model": "gemini-2.5-flash", "thinking_mode": "off"})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %s", err, resultText(res))
	}
	var u struct{ ThinkingTokens int }
	metaOf(t, res, "usage", &u)
	if got := thinkingConfig(); got != `{"thinkingBudget":0}` || res.Meta["notApplied"] != nil || u.ThinkingTokens != 0 {
		t.Errorf("thinkingConfig %s, notApplied %v, thinking tokens %d", got, res.Meta["notApplied"], u.ThinkingTokens)
	}

	// A level model, which cannot: its lowest level, said so.
	res, err = callTool(cs, "chat", map[string]any{"prompt": "quick", "model": "gemini-3-pro-preview", "thinking_mode": "off"})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %s", err, resultText(res))
	}
	var notes []string
	metaOf(t, res, "notApplied", &notes)
	if got := thinkingConfig(); got != `{"thinkingLevel":"LOW"}` || len(notes) != 1 || !strings.Contains(notes[0], "off sent as LOW") {
		t.Errorf("thinkingConfig %s, notApplied %q", got, notes)
	}

	// A budget model that cannot stop thinking: refused before any
	// request.
	before := len(h.api.Requests())
	callErr(t, cs, "chat", map[string]any{"prompt": "quick", "model": "gemini-2.5-pro", "thinking_mode": "off"},
		"model gemini-2.5-pro cannot turn thinking off", "thinking_mode minimal")
	for _, r := range h.api.Requests()[before:] {
		if r.Method == fakeapi.MethodStream {
			t.Errorf("a refused turn reached the API: %s", r.Body)
		}
	}
}

func TestDebugCodeExecution(t *testing.T) {
	e := newExpertEnv(t)
	cs := e.stdio(t)
	res, err := callExpert(t, cs, "debug", map[string]any{"error_description": "the sum is wrong [[code:FAILED]]", "code_execution": true})
	if err != nil || res.IsError {
		t.Fatalf("debug: %v %+v", err, res)
	}
	if text := resultText(res); !strings.Contains(text, "```python\n"+fakeapi.CodeFor("FAILED")+"\n```") || !strings.Contains(text, "Code execution: failed") {
		t.Errorf("debug's answer %q has no code", text)
	}
	var runs []codeRun
	metaOf(t, res, "codeExecution", &runs)
	if len(runs) != 1 || runs[0].Outcome != "OUTCOME_FAILED" {
		t.Errorf("_meta.codeExecution = %+v", runs)
	}
	s := e.streams()
	if !s[len(s)-1].CodeExecution() {
		t.Error("debug's request did not offer codeExecution")
	}
}

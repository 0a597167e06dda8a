package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// The tests here check what the API backend's results say of how Gemini's
// answer ended, which model gave it and what it cost, against a fake
// Gemini API that reports them in the API's wire format.

// lastNote is the last text item of res: the server's note after the
// answer, when there is one.
func lastNote(res *mcp.CallToolResult) string {
	if len(res.Content) == 0 {
		return ""
	}
	tc, _ := res.Content[len(res.Content)-1].(*mcp.TextContent)
	if tc == nil {
		return ""
	}
	return tc.Text
}

// contentsOf returns the role and text of each content of an API request,
// in order.
func contentsOf(t *testing.T, r fakeapi.Request) [][2]string {
	t.Helper()
	var body struct {
		Contents []struct {
			Role  string
			Parts []struct{ Text string }
		}
	}
	if err := json.Unmarshal(r.Body, &body); err != nil {
		t.Fatal(err)
	}
	var out [][2]string
	for _, c := range body.Contents {
		var text strings.Builder
		for _, p := range c.Parts {
			text.WriteString(p.Text)
		}
		out = append(out, [2]string{c.Role, text.String()})
	}
	return out
}

// TestAPIAnswerCutAtOutputLimit: an answer whose finish reason is
// MAX_TOKENS is given with a note and _meta.incomplete and
// _meta.finishReason, and kept as its session's turn: a chat-reply
// "continue" sends the cut text as the last model turn, and its answer
// follows it.
func TestAPIAnswerCutAtOutputLimit(t *testing.T) {
	t.Parallel()
	e, fake := apiEnv(t)
	cs := connect(t, e.command("--backend", "api"))
	res := callOK(t, cs, "chat", map[string]any{"prompt": "[[finish-text:MAX_TOKENS]] The capital of France is"})
	note := lastNote(res)
	if !strings.Contains(note, "INCOMPLETE") || !strings.Contains(note, "MAX_TOKENS") || !strings.Contains(note, `"continue"`) {
		t.Errorf("the note after a cut answer: %q", note)
	}
	if res.Meta["incomplete"] != true || res.Meta["finishReason"] != "MAX_TOKENS" {
		t.Errorf("_meta of a cut answer: %v", res.Meta)
	}
	id, _ := res.Meta["sessionId"].(string)
	if id == "" {
		t.Fatalf("a cut answer kept no session: %v", res.Meta)
	}
	cut := answerOf(res)

	reply := callOK(t, cs, "chat-reply", map[string]any{"sessionId": id, "prompt": "continue"})
	if reply.Meta["incomplete"] != nil || reply.Meta["finishReason"] != nil || strings.Contains(lastNote(reply), "INCOMPLETE") {
		t.Errorf("a whole reply marked cut: %v %q", reply.Meta, lastNote(reply))
	}
	r := lastStream(t, fake, "continue")
	got := contentsOf(t, r)
	if len(got) != 3 || got[1] != [2]string{"model", cut} || got[2] != [2]string{"user", "continue"} {
		t.Fatalf("the continuation's contents %q, want the prompt, the cut answer %q, then \"continue\"", got, cut)
	}
}

// TestAPIFinishReasons: each finish reason the genai SDK defines ends the
// call as the docs say: a cut answer kept (MAX_TOKENS, CONTINUATION), one
// that may be cut anywhere given but not kept (OTHER and the reasons the
// API does not explain), or a failed call (safety, recitation, language,
// broken tool calls).
func TestAPIFinishReasons(t *testing.T) {
	t.Parallel()
	e, _ := apiEnv(t)
	cs := connect(t, e.command("--backend", "api"))
	for _, reason := range []string{"MAX_TOKENS", "CONTINUATION"} {
		res := callOK(t, cs, "chat", map[string]any{"prompt": "[[finish-text:" + reason + "]] kept"})
		if res.Meta["incomplete"] != true || res.Meta["finishReason"] != reason || res.Meta["sessionId"] == nil {
			t.Errorf("%s: _meta %v", reason, res.Meta)
		}
	}
	for _, reason := range []string{"OTHER", "FINISH_REASON_UNSPECIFIED", "NO_IMAGE", "IMAGE_OTHER", "SOMETHING_NEW"} {
		res := callOK(t, cs, "chat", map[string]any{"prompt": "[[finish-text:" + reason + "]] not kept"})
		if res.Meta["incomplete"] != true || res.Meta["finishReason"] != reason || res.Meta["sessionId"] != nil ||
			!strings.Contains(lastNote(res), "not recorded") {
			t.Errorf("%s: _meta %v, note %q", reason, res.Meta, lastNote(res))
		}
	}
	for reason, says := range map[string]string{
		"SAFETY":                   "for safety",
		"PROHIBITED_CONTENT":       "for safety",
		"BLOCKLIST":                "for safety",
		"SPII":                     "for safety",
		"IMAGE_SAFETY":             "for safety",
		"IMAGE_PROHIBITED_CONTENT": "for safety",
		"RECITATION":               "recited",
		"IMAGE_RECITATION":         "recited",
		"LANGUAGE":                 "language",
		"MALFORMED_FUNCTION_CALL":  "tool call",
		"UNEXPECTED_TOOL_CALL":     "tool call",
		"TOO_MANY_TOOL_CALLS":      "too many tools",
	} {
		callErr(t, cs, "chat", map[string]any{"prompt": "[[finish-text:" + reason + "]] refused"}, reason, says)
	}
	if ids := sessionIDs(t, cs); len(ids) != 2 {
		t.Errorf("sessions %q, want the two kept cut answers'", ids)
	}
}

// TestAPIModelThatAnswered: _meta.model names the model the API says
// answered (its modelVersion), not the one asked for.
func TestAPIModelThatAnswered(t *testing.T) {
	t.Parallel()
	e, _ := apiEnv(t)
	cs := connect(t, e.command("--backend", "api"))
	res := callOK(t, cs, "chat", map[string]any{"prompt": "[[model-version:models/gemini-2.5-pro-002]] hi", "model": "gemini-2.5-pro"})
	if res.Meta["model"] != "gemini-2.5-pro-002" {
		t.Errorf("_meta.model %v, want the modelVersion gemini-2.5-pro-002", res.Meta["model"])
	}
	res = callOK(t, cs, "chat", map[string]any{"prompt": "plain"})
	if res.Meta["model"] != "gemini-2.5-flash" {
		t.Errorf("_meta.model %v, want gemini-2.5-flash", res.Meta["model"])
	}
}

// TestAPIReplyKeepsSessionModel: a chat-reply without model goes on with
// the model of its session, not the server's default; with model, it
// takes that one.
func TestAPIReplyKeepsSessionModel(t *testing.T) {
	t.Parallel()
	e, fake := apiEnv(t)
	cs := connect(t, e.command("--backend", "api"))
	res := callOK(t, cs, "chat", map[string]any{"prompt": "first", "model": "gemini-3-pro-preview"})
	id := res.Meta["sessionId"].(string)
	callOK(t, cs, "chat-reply", map[string]any{"sessionId": id, "prompt": "second, no model"})
	if r := lastStream(t, fake, "second, no model"); r.Model != "gemini-3-pro-preview" {
		t.Errorf("a chat-reply without model went to %s, want the session's gemini-3-pro-preview", r.Model)
	}
	callOK(t, cs, "chat-reply", map[string]any{"sessionId": id, "prompt": "third, on pro", "model": "gemini-2.5-pro"})
	if r := lastStream(t, fake, "third, on pro"); r.Model != "gemini-2.5-pro" {
		t.Errorf("a chat-reply with model went to %s", r.Model)
	}
	callOK(t, cs, "chat-reply", map[string]any{"sessionId": id, "prompt": "fourth, no model"})
	if r := lastStream(t, fake, "fourth, no model"); r.Model != "gemini-2.5-pro" {
		t.Errorf("a chat-reply without model after a switch went to %s, want gemini-2.5-pro", r.Model)
	}
}

// TestAPIToolUseTokens: the tokens the API's tools fed the model are in
// _meta.usage, with the API's total, and in the token metric.
func TestAPIToolUseTokens(t *testing.T) {
	t.Parallel()
	e, _ := apiEnv(t)
	addr, maddr, _ := startWithMetrics(t, e, "--backend", "api")
	cs := httpClient(t, addr, "")
	res := callOK(t, cs, "chat", map[string]any{"prompt": "summarise", "urls": []any{"https://example.com/spec"}, "google_search": true})
	var usage struct{ PromptTokens, OutputTokens, ToolUsePromptTokens, TotalTokens int }
	metaOf(t, res, "usage", &usage)
	want := fakeapi.URLToolUseTokens + fakeapi.SearchToolUseTokens
	if usage.ToolUsePromptTokens != want || usage.TotalTokens != usage.PromptTokens+usage.OutputTokens+want {
		t.Errorf("_meta.usage %+v, want toolUsePromptTokens %d and the total", usage, want)
	}
	got := scrapeMetrics(t, "http://"+maddr+"/metrics", "")
	series := `gen_ai_client_token_usage_sum{gen_ai_token_type="tool_use",gen_ai_request_model="default",backend="api"}`
	if got[series] != float64(want) {
		t.Errorf("%s = %v, want %d", series, got[series], want)
	}
}

// TestWarmStopReasons: the warm backend says a turn the Gemini CLI ended
// with a stopReason other than end_turn: max_turn_requests (its loop
// detector) gives the text said cut, with _meta.incomplete and
// _meta.finishReason, and the session goes on; a refusal fails the call.
func TestWarmStopReasons(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cs := connect(t, e.command("--backend", "warm"))
	res := callOK(t, cs, "chat", map[string]any{"prompt": "[[stop:max_turn_requests]] loop"})
	if res.Meta["incomplete"] != true || res.Meta["finishReason"] != "max_turn_requests" ||
		!strings.Contains(lastNote(res), "INCOMPLETE") || !strings.Contains(lastNote(res), "loop detector") {
		t.Errorf("a turn the CLI stopped: _meta %v, note %q", res.Meta, lastNote(res))
	}
	id, _ := res.Meta["sessionId"].(string)
	if id == "" {
		t.Fatalf("no session: %v", res.Meta)
	}
	reply := callOK(t, cs, "chat-reply", map[string]any{"sessionId": id, "prompt": "go on"})
	if reply.Meta["incomplete"] != nil || !strings.Contains(answerOf(reply), "go on") {
		t.Errorf("the reply %q, _meta %v", answerOf(reply), reply.Meta)
	}
	callErr(t, cs, "chat", map[string]any{"prompt": "[[stop:refusal]] no"}, "refused", "refusal")
}

// TestOneshotLoopWarning: a one-shot run whose JSON output warns that the
// CLI's loop detector stopped the turn gives the text said cut, with
// _meta.incomplete and _meta.finishReason, and the session goes on.
func TestOneshotLoopWarning(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cs := connect(t, e.command("--backend", "oneshot"))
	res := callOK(t, cs, "chat", map[string]any{"prompt": "[[loop]] again and again"})
	if res.Meta["incomplete"] != true || res.Meta["finishReason"] != "loop_detected" ||
		!strings.Contains(lastNote(res), "INCOMPLETE") || !strings.Contains(lastNote(res), "loop detector") {
		t.Errorf("a turn the CLI stopped: _meta %v, note %q", res.Meta, lastNote(res))
	}
	id, _ := res.Meta["sessionId"].(string)
	if id == "" {
		t.Fatalf("no session: %v", res.Meta)
	}
	reply := callOK(t, cs, "chat-reply", map[string]any{"sessionId": id, "prompt": "go on"})
	if reply.Meta["incomplete"] != nil || !strings.Contains(answerOf(reply), "turn=2") {
		t.Errorf("the reply %q, _meta %v", answerOf(reply), reply.Meta)
	}
}

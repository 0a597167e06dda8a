package main

import (
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// The tests here run the built server on the API backend against a fake
// Gemini API whose model list and quotas they set: the default model
// follows the list, and --fallback-model answers when a quota runs out.

// streamModels returns the model of each turn the fake API answered or
// refused, oldest first.
func streamModels(fake *fakeapi.Server) string {
	var out []string
	for _, r := range streams(fake) {
		out = append(out, r.Model)
	}
	return strings.Join(out, " ")
}

// TestAPIDefaultModelFromList: without --model the API backend answers with
// the newest stable Flash model of the model list, and a server started
// after a newer Flash is listed answers with that one.
func TestAPIDefaultModelFromList(t *testing.T) {
	t.Parallel()
	e, fake := apiEnv(t)
	cs := connect(t, e.command("--backend", "api"))
	res := callOK(t, cs, "chat", map[string]any{"prompt": "which model?"})
	if res.Meta["model"] != "gemini-2.5-flash" || !strings.Contains(answerOf(res), "model=gemini-2.5-flash ") {
		t.Fatalf("the default answered as %v: %q", res.Meta["model"], answerOf(res))
	}

	fake.SetModels(append(fakeapi.DefaultModels(),
		fakeapi.Model{Name: "models/gemini-3-flash", Methods: []string{"generateContent"}, Thinking: true},
		fakeapi.Model{Name: "models/gemini-3.5-flash-preview", Methods: []string{"generateContent"}}))
	cs = connect(t, e.command("--backend", "api"))
	res = callOK(t, cs, "chat", map[string]any{"prompt": "and now?"})
	if res.Meta["model"] != "gemini-3-flash" {
		t.Fatalf("after gemini-3-flash was listed, the default answered as %v", res.Meta["model"])
	}
}

// TestAPIQuotaFallback: a call whose model's daily quota is exhausted is
// answered by --fallback-model at once, which _meta and a note say; the
// session goes on with the fallback. A per-minute limit is waited out and
// retried on the asked model.
func TestAPIQuotaFallback(t *testing.T) {
	t.Parallel()
	e, fake := apiEnv(t)
	e.vars = append(e.vars, "GEMINI_MCP_FALLBACK_MODEL=flash")
	fake.ExhaustQuota("gemini-2.5-pro", &fakeapi.Quota{Daily: true, RetryDelay: "0.01s"})
	cs := connect(t, e.command("--backend", "api"))
	res := callOK(t, cs, "chat", map[string]any{"prompt": "hello", "model": "gemini-2.5-pro"})
	if res.Meta["model"] != "gemini-2.5-flash" || res.Meta["fallbackFrom"] != "gemini-2.5-pro" {
		t.Fatalf("_meta of a fallback's answer: %v", res.Meta)
	}
	if want := fakeapi.Answer("gemini-2.5-flash", 1, "", "hello"); answerOf(res) != want {
		t.Errorf("the answer %q, want the fallback's %q", answerOf(res), want)
	}
	if note := lastNote(res); !strings.Contains(note, "quota of gemini-2.5-pro is exhausted") || !strings.Contains(note, "gemini-2.5-flash (--fallback-model)") {
		t.Errorf("the note after a fallback's answer: %q", note)
	}
	if got := streamModels(fake); got != "gemini-2.5-pro gemini-2.5-flash" {
		t.Fatalf("the turns went to %s", got)
	}
	reply := callOK(t, cs, "chat-reply", map[string]any{"sessionId": res.Meta["sessionId"], "prompt": "more"})
	if reply.Meta["model"] != "gemini-2.5-flash" || reply.Meta["fallbackFrom"] != nil {
		t.Fatalf("the reply's _meta: %v", reply.Meta)
	}

	fake.ExhaustQuota("gemini-2.5-pro", &fakeapi.Quota{RetryDelay: "0.05s", Requests: 1})
	res = callOK(t, cs, "chat", map[string]any{"prompt": "per minute", "model": "pro"})
	if res.Meta["model"] != "gemini-2.5-pro" || res.Meta["fallbackFrom"] != nil {
		t.Fatalf("a per-minute limit's answer: %v", res.Meta)
	}
	if got := streamModels(fake); !strings.HasSuffix(got, "gemini-2.5-pro gemini-2.5-pro") {
		t.Fatalf("a per-minute limit was not retried on the asked model: %s", got)
	}
}

// TestAPIQuotaExhausted: without --fallback-model an exhausted quota is a
// clear error after one request; with a fallback whose quota is exhausted
// too, the error names both models.
func TestAPIQuotaExhausted(t *testing.T) {
	t.Parallel()
	e, fake := apiEnv(t)
	fake.ExhaustQuota("gemini-2.5-pro", &fakeapi.Quota{Daily: true, RetryDelay: "43s"})
	fake.ExhaustQuota("gemini-2.5-flash-lite", &fakeapi.Quota{Daily: true})
	cs := connect(t, e.command("--backend", "api"))
	text := callErr(t, cs, "chat", map[string]any{"prompt": "hello", "model": "gemini-2.5-pro"},
		"quota or rate limit is exhausted", "You exceeded your current quota", "43s")
	if strings.Contains(text, "fallback") || streamModels(fake) != "gemini-2.5-pro" {
		t.Fatalf("without a fallback: %q; requests to %s", text, streamModels(fake))
	}

	cs = connect(t, e.command("--backend", "api", "--fallback-model", "flash-lite"))
	callErr(t, cs, "chat", map[string]any{"prompt": "hello again", "model": "gemini-2.5-pro"},
		"model gemini-2.5-pro: ", "the fallback model flash-lite (--fallback-model) was tried and failed too")
	if got := streamModels(fake); got != "gemini-2.5-pro gemini-2.5-pro gemini-2.5-flash-lite" {
		t.Fatalf("the turns went to %s", got)
	}
}

// TestExpertQuotaFallback: an expert tool's answer from the fallback model
// says so in its _meta and a note, as chat's does; here the exhausted
// model is the default one.
func TestExpertQuotaFallback(t *testing.T) {
	e := newExpertEnv(t)
	e.api.ExhaustQuota("gemini-2.5-flash", &fakeapi.Quota{Daily: true})
	cs := e.stdio(t, "--fallback-model", "flash-lite")
	res, err := callExpert(t, cs, "debug", map[string]any{"error_description": "boom"})
	if err != nil || res.IsError {
		t.Fatalf("debug: %v %s", err, resultText(res))
	}
	if res.Meta["model"] != "gemini-2.5-flash-lite" || res.Meta["fallbackFrom"] != "gemini-2.5-flash" {
		t.Fatalf("debug's _meta: model %v, fallbackFrom %v", res.Meta["model"], res.Meta["fallbackFrom"])
	}
	if note := lastNote(res); !strings.Contains(note, "quota of gemini-2.5-flash is exhausted") {
		t.Errorf("debug's note: %q", note)
	}
}

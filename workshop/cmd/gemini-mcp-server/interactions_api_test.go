package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// The tests here run the built server on the API backend against a fake
// Gemini API that lists a model served on the Interactions API alone:
// chat and chat-reply on it run as background interactions, and with
// --api-server-history plain turns continue their stored interaction.

// interactionCreates returns the bodies of the interaction creates the
// fake API saw, oldest first.
func interactionCreates(t *testing.T, fake *fakeapi.Server) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, r := range fake.Requests() {
		if r.Method == fakeapi.MethodInteractionCreate {
			var body map[string]any
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatal(err)
			}
			out = append(out, body)
		}
	}
	return out
}

// TestAPIInteractionsOnlyModel: a chat and a chat-reply on a model the
// model list offers on the Interactions API alone run there in the
// background (the reply resends the conversation), also as a job, whose
// cancel cancels its interaction; Google keeps none of it afterwards;
// each status that ends without an answer
// is a tool error saying so, with what was produced.
func TestAPIInteractionsOnlyModel(t *testing.T) {
	t.Parallel()
	e, fake := apiEnv(t)
	fake.SetModels(append(fakeapi.DefaultModels(), fakeapi.InteractionsOnly()))
	cs := connect(t, e.command("--backend", "api"))

	prompt := "prove it [[steps:0]]"
	res := callOK(t, cs, "chat", map[string]any{"prompt": prompt, "model": fakeapi.InteractionsOnlyModel})
	if answerOf(res) != fakeapi.InteractionAnswer(prompt, 1) || res.Meta["model"] != fakeapi.InteractionsOnlyModel ||
		res.Meta["interactionId"] != nil {
		t.Fatalf("chat (its interaction, deleted, is not named): %s %v", resultText(res), res.Meta)
	}
	reply := "and then? [[steps:0]]"
	res = callOK(t, cs, "chat-reply", map[string]any{"sessionId": res.Meta["sessionId"], "prompt": reply})
	if answerOf(res) != fakeapi.InteractionAnswer(reply, 2) {
		t.Fatalf("chat-reply: %s %v", resultText(res), res.Meta)
	}
	creates := interactionCreates(t, fake)
	if len(creates) != 2 || creates[0]["background"] != true || creates[1]["previous_interaction_id"] != nil {
		t.Fatalf("the creates %v", creates)
	}
	if s := streams(fake); len(s) != 0 {
		t.Errorf("generateContent was asked: %+v", s)
	}

	job := startJob(t, cs, "chat", map[string]any{"prompt": "as a job [[steps:0]]", "model": fakeapi.InteractionsOnlyModel})
	res, err := jobEnd(t, cs, job, nil)
	if err != nil || res.IsError || answerOf(res) != fakeapi.InteractionAnswer("as a job [[steps:0]]", 1) {
		t.Fatalf("the job: %v %s", err, resultText(res))
	}
	if ids := fake.Interactions(); len(ids) != 0 {
		t.Errorf("the API still holds %v", ids)
	}
	job = startJob(t, cs, "chat", map[string]any{"prompt": "forever [[hold]]", "model": fakeapi.InteractionsOnlyModel})
	if res, err = jobEnd(t, cs, job, map[string]any{"cancel": true}); err != nil || res.Meta["jobStatus"] != "cancelled" {
		t.Errorf("the cancelled job: %v %s %v", err, resultText(res), res.Meta)
	}
	err = fake.WaitFor(geminitest.Context(t), func(reqs []fakeapi.Request) bool {
		return slices.ContainsFunc(reqs, func(r fakeapi.Request) bool { return r.Method == fakeapi.MethodInteractionCancel })
	})
	if err != nil {
		t.Errorf("the job's cancel did not cancel its interaction: %v", err)
	}

	for final, says := range map[string][]string{
		"failed":          {"failed", fakeapi.InteractionFailedMessage},
		"incomplete":      {"stopped incomplete", "What it produced before it stopped:\nReport on:"},
		"budget_exceeded": {"budget was exceeded", "What it produced before it stopped:\nReport on:"},
		"requires_action": {"waiting for function results"},
	} {
		callErr(t, cs, "chat", map[string]any{"prompt": "go [[steps:0]] [[final:" + final + "]]", "model": fakeapi.InteractionsOnlyModel}, says...)
	}
	callErr(t, cs, "chat", map[string]any{"prompt": "look", "model": fakeapi.InteractionsOnlyModel, "google_search": true},
		"Interactions API alone", "google_search")
}

// TestAPIServerHistory: with --api-server-history a chat-reply sends only
// its prompt, continuing the chat's stored interaction, which the chat's
// _meta.interactionId names (each turn's the one Google keeps); after the API
// lost it, the next reply resends the conversation from the session
// store and says so in _meta.notApplied.
func TestAPIServerHistory(t *testing.T) {
	t.Parallel()
	e, fake := apiEnv(t)
	cs := connect(t, e.command("--backend", "api", "--api-server-history"))
	res := callOK(t, cs, "chat", map[string]any{"prompt": "hello"})
	id := res.Meta["sessionId"]
	if answerOf(res) != fakeapi.InteractionAnswer("hello", 1) || len(streams(fake)) != 0 {
		t.Fatalf("chat: %s", resultText(res))
	}
	kept := res.Meta["interactionId"]
	res = callOK(t, cs, "chat-reply", map[string]any{"sessionId": id, "prompt": "again"})
	creates := interactionCreates(t, fake)
	if answerOf(res) != fakeapi.InteractionAnswer("again", 2) || kept == nil || creates[1]["previous_interaction_id"] != kept || creates[1]["input"] != "again" {
		t.Fatalf("chat-reply: %s, create %v; the chat's _meta.interactionId %v", resultText(res), creates[1], kept)
	}
	if next := res.Meta["interactionId"]; next == nil || next == kept || !slices.Contains(fake.Interactions(), next.(string)) {
		t.Errorf("the reply's _meta.interactionId %v, which the API holds: %v", next, fake.Interactions())
	}

	fake.ForgetInteractions()
	res = callOK(t, cs, "chat-reply", map[string]any{"sessionId": id, "prompt": "third"})
	if notes, _ := json.Marshal(res.Meta["notApplied"]); answerOf(res) != fakeapi.InteractionAnswer("third", 3) ||
		!strings.Contains(string(notes), "resent from this server's session store") {
		t.Fatalf("the reply after the stored interaction vanished: %s %v", resultText(res), res.Meta)
	}
}

// TestAPIServerHistoryOfAnotherToken: two tokens on one server (and so
// one API key) with --api-server-history: token two, given token one's
// session id, cannot continue it, and no interaction is created that
// continues token one's stored interaction but token one's own reply.
func TestAPIServerHistoryOfAnotherToken(t *testing.T) {
	t.Parallel()
	e, fake := apiEnv(t)
	e.vars = append(e.vars, "GEMINI_MCP_TOKENS="+tokenOne+","+tokenTwo)
	addr, _ := startHTTP(t, e, "--backend", "api", "--api-server-history")
	one, two := httpClient(t, addr, tokenOne), httpClient(t, addr, tokenTwo)
	res := callOK(t, one, "chat", map[string]any{"prompt": "my plan"})
	sid, kept := res.Meta["sessionId"], res.Meta["interactionId"]
	if sid == nil || kept == nil {
		t.Fatalf("token one's chat: %s %v", resultText(res), res.Meta)
	}
	if res, err := callTool(two, "chat-reply", map[string]any{"sessionId": sid, "prompt": "what was the plan?"}); err != nil || !res.IsError {
		t.Fatalf("token two continued token one's session: %v %s", err, resultText(res))
	}
	callOK(t, one, "chat-reply", map[string]any{"sessionId": sid, "prompt": "go on"})
	var continued []map[string]any
	for _, c := range interactionCreates(t, fake) {
		if c["previous_interaction_id"] == kept {
			continued = append(continued, c)
		}
	}
	if len(continued) != 1 || continued[0]["input"] != "go on" {
		t.Fatalf("the creates continuing token one's interaction: %v; want its own reply alone", continued)
	}
}

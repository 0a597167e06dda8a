package api

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// interactionFixture is a fixture whose fake lists the interactions-only
// model beside the default ones, polled every millisecond.
func interactionFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	opts.InteractionPoll = time.Millisecond
	f := newFixture(t, opts)
	f.fake.SetModels(append(fakeapi.DefaultModels(), fakeapi.InteractionsOnly()))
	return f
}

// creates are the interaction creates the fake saw, their bodies decoded.
func (f *fixture) creates() []map[string]any {
	var out []map[string]any
	for _, r := range f.fake.Requests() {
		if r.Method == fakeapi.MethodInteractionCreate {
			var body map[string]any
			if err := json.Unmarshal(r.Body, &body); err != nil {
				f.t.Fatal(err)
			}
			out = append(out, body)
		}
	}
	return out
}

// record is the last turn recorded of session id.
func (f *fixture) record(id string) turnRecord {
	f.t.Helper()
	turns, _, err := f.hist.LoadTurns(context.Background(), id)
	if err != nil || len(turns) == 0 {
		f.t.Fatalf("session %s: %d turns, %v", id, len(turns), err)
	}
	var tr turnRecord
	if err := json.Unmarshal(turns[len(turns)-1], &tr); err != nil {
		f.t.Fatal(err)
	}
	return tr
}

// A model the list offers on the Interactions API alone runs there, in the
// background, polled to its answer with its thoughts as progress; its
// reply resends the conversation from the store; without server-side
// history Google keeps none of it after the call.
func TestInteractionsOnlyModelRunsInTheBackground(t *testing.T) {
	t.Parallel()
	f := interactionFixture(t, Options{})
	obs := &recorder{}
	prompt := "prove it [[steps:2]]"
	a := f.mustRun(backend.Turn{Prompt: prompt, Model: fakeapi.InteractionsOnlyModel, IncludeThoughts: true,
		SystemPrompt: "be brief", Temperature: new(0.5), Observer: obs})
	if a.Text != fakeapi.InteractionAnswer(prompt, 1) || a.Via != "api" || a.Model != fakeapi.InteractionsOnlyModel ||
		!strings.Contains(a.Thoughts, fakeapi.ThoughtText(2)) || a.Usage == nil || a.Usage.ThinkingTokens == 0 {
		t.Fatalf("answer %+v", a)
	}
	if len(f.streams()) != 0 {
		t.Errorf("generateContent was asked: %+v", f.streams())
	}
	obs.mu.Lock()
	acts := strings.Join(obs.activity, "|")
	obs.mu.Unlock()
	if obs.started != 1 || !strings.Contains(acts, "in the background") || !strings.Contains(acts, "thinking: "+fakeapi.ThoughtText(2)) {
		t.Errorf("started %d, activity %s", obs.started, acts)
	}
	c := f.creates()
	if len(c) != 1 || c[0]["background"] != true || c[0]["system_instruction"] != "be brief" || c[0]["input"] != prompt {
		t.Fatalf("the create %+v", c)
	}
	if gc, _ := c[0]["generation_config"].(map[string]any); gc["temperature"] != nil || gc["thinking_summaries"] != "auto" {
		t.Errorf("generation_config %+v", gc)
	}
	if !slices.ContainsFunc(a.NotApplied, func(n string) bool { return strings.HasPrefix(n, "temperature: not sent") }) {
		t.Errorf("notes %v", a.NotApplied)
	}
	if ids := f.fake.Interactions(); len(ids) != 0 {
		t.Errorf("the API still holds %v after the call", ids)
	}
	if tr := f.record(a.SessionID); tr.Interaction != "" || tr.ModelName != fakeapi.InteractionsOnlyModel || a.Interaction != "" {
		t.Errorf("record %+v, the answer names interaction %q", tr, a.Interaction)
	}

	reply := "and then? [[steps:0]]"
	b := f.mustRun(backend.Turn{Session: a.SessionID, Prompt: reply})
	if b.Text != fakeapi.InteractionAnswer(reply, 2) || b.SessionID != a.SessionID || f.turns(a.SessionID) != 2 {
		t.Fatalf("reply %+v", b)
	}
	c = f.creates()
	if _, prev := c[1]["previous_interaction_id"]; prev {
		t.Errorf("the reply continued a stored interaction without server-side history: %+v", c[1])
	}
	steps, _ := c[1]["input"].([]any)
	if len(steps) != 3 || !strings.Contains(fmt.Sprint(steps[1]), fakeapi.InteractionAnswer(prompt, 1)) {
		t.Errorf("the reply's input %+v", c[1]["input"])
	}
}

// With server-side history a plain turn runs as a stored interaction and
// its reply sends only itself, continuing it by previous_interaction_id;
// when the API no longer holds it, the conversation is resent from the
// store and the answer says so; a turn asking for what interactions do
// not carry here goes through generateContent, and the turn after it
// resends.
func TestServerHistoryContinuesTheStoredInteraction(t *testing.T) {
	t.Parallel()
	f := interactionFixture(t, Options{ServerHistory: true})
	a := f.mustRun(backend.Turn{Prompt: "hello"})
	first := f.record(a.SessionID).Interaction
	if a.Text != fakeapi.InteractionAnswer("hello", 1) || first == "" || len(f.streams()) != 0 || a.Interaction != first {
		t.Fatalf("first %+v, interaction %q", a, first)
	}
	b := f.mustRun(backend.Turn{Session: a.SessionID, Prompt: "again"})
	c := f.creates()
	if b.Text != fakeapi.InteractionAnswer("again", 2) || c[1]["previous_interaction_id"] != first || c[1]["input"] != "again" {
		t.Fatalf("second %+v, create %+v", b, c[1])
	}

	f.fake.ForgetInteractions()
	d := f.mustRun(backend.Turn{Session: a.SessionID, Prompt: "third"})
	if d.Text != fakeapi.InteractionAnswer("third", 3) || !slices.ContainsFunc(d.NotApplied, func(n string) bool {
		return strings.Contains(n, "resent from this server's session store")
	}) {
		t.Fatalf("after the stored interaction vanished: %+v", d)
	}
	third := f.record(a.SessionID).Interaction
	if third == "" || third == first {
		t.Errorf("the resent turn's interaction %q", third)
	}

	e := f.mustRun(backend.Turn{Session: a.SessionID, Prompt: "search", Builtins: backend.Builtins{GoogleSearch: true}})
	if len(f.streams()) != 1 || f.record(a.SessionID).Interaction != "" || e.Text == "" {
		t.Fatalf("a google_search turn: %+v", e)
	}
	g := f.mustRun(backend.Turn{Session: a.SessionID, Prompt: "fifth"})
	c = f.creates()
	if last := c[len(c)-1]; g.Text != fakeapi.InteractionAnswer("fifth", 5) || last["previous_interaction_id"] != nil {
		t.Fatalf("the turn after a generateContent one: %+v, create %+v", g, last)
	}
	if f.turns(a.SessionID) != 5 {
		t.Errorf("%d turns recorded", f.turns(a.SessionID))
	}
}

// An interaction that stops without its answer is a clear error with what
// it produced, and records nothing.
func TestInteractionStatusesAreClearErrors(t *testing.T) {
	t.Parallel()
	f := interactionFixture(t, Options{})
	for final, says := range map[string][]string{
		"failed":          {"failed", fakeapi.InteractionFailedMessage},
		"incomplete":      {"stopped incomplete", "What it produced before it stopped:\nReport on:"},
		"budget_exceeded": {"budget was exceeded", "What it produced before it stopped:\nReport on:"},
		"requires_action": {"waiting for function results"},
		"cancelled":       {"was cancelled"},
	} {
		_, err := f.run(backend.Turn{Prompt: "go [[steps:0]] [[final:" + final + "]]", Model: fakeapi.InteractionsOnlyModel})
		wantKind(t, err, backend.KindFailed, 0, says...)
	}
	if ids := f.fake.Interactions(); len(ids) != 0 {
		t.Errorf("the API still holds %v", ids)
	}
	for _, r := range f.fake.Requests() {
		if r.Method == fakeapi.MethodStream {
			t.Errorf("generateContent was asked")
		}
	}
}

// The call's end cancels its background interaction; what an interaction
// does not carry is refused before anything is sent.
func TestInteractionCancelledWithItsCall(t *testing.T) {
	t.Parallel()
	f := interactionFixture(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	obs := &recorder{onAct: func(msg string) {
		if strings.Contains(msg, "in the background") {
			cancel()
		}
	}}
	_, err := f.b.Run(ctx, backend.Turn{Prompt: "forever [[hold]]", Model: fakeapi.InteractionsOnlyModel, Observer: obs})
	wantKind(t, err, backend.KindCancelled, 0)
	if !slices.ContainsFunc(f.fake.Requests(), func(r fakeapi.Request) bool { return r.Method == fakeapi.MethodInteractionCancel }) {
		t.Errorf("the interaction was not cancelled: %+v", f.fake.Requests())
	}

	n := len(f.fake.Requests())
	_, err = f.run(backend.Turn{Prompt: "look it up", Model: fakeapi.InteractionsOnlyModel, Builtins: backend.Builtins{GoogleSearch: true}})
	wantKind(t, err, backend.KindInput, 0, "Interactions API alone", "google_search")
	for _, r := range f.fake.Requests()[n:] {
		if r.Method != fakeapi.MethodListModels {
			t.Errorf("a refused turn sent %s", r.Method)
		}
	}
}

// The model list shows the interactions-only model as such, and the
// others as before; an embedding model, which offers neither, stays out.
func TestModelsListInteractionsOnly(t *testing.T) {
	t.Parallel()
	f := interactionFixture(t, Options{})
	list, err := f.b.Models(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	only := map[string]bool{}
	for _, m := range list {
		only[m.Name] = m.InteractionsOnly
	}
	if v, ok := only[fakeapi.InteractionsOnlyModel]; !ok || !v || only["gemini-2.5-flash"] {
		t.Errorf("the list %+v", list)
	}
	if _, ok := only["text-embedding-004"]; ok {
		t.Errorf("an embedding model is listed: %+v", list)
	}
}

// A replica with another API key, on the same session store, cannot
// continue the interaction the first one stored: it resends the
// conversation from the store, and the session goes on.
func TestServerHistoryOnAReplicaWithAnotherKey(t *testing.T) {
	t.Parallel()
	f := interactionFixture(t, Options{ServerHistory: true})
	a := f.mustRun(backend.Turn{Prompt: "hello"})
	other, err := New(Options{ServerHistory: true, Getenv: func(k string) string {
		if k == "GEMINI_API_KEY" {
			return "another-key"
		}
		return env(f.fake)(k)
	}}, f.hist, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Close)
	b, err := other.Run(context.Background(), backend.Turn{Session: a.SessionID, Prompt: "again"})
	if err != nil || b.Text != fakeapi.InteractionAnswer("again", 2) || !slices.ContainsFunc(b.NotApplied, func(n string) bool {
		return strings.Contains(n, "resent from this server's session store")
	}) {
		t.Fatalf("the other replica's reply: %+v %v", b, err)
	}
	c := f.mustRun(backend.Turn{Session: a.SessionID, Prompt: "third"})
	if c.Text != fakeapi.InteractionAnswer("third", 3) || f.turns(a.SessionID) != 3 {
		t.Fatalf("the first replica's reply after it: %+v", c)
	}
}

// cancelOnStart cancels the call as its turn starts.
type cancelOnStart struct{ cancel context.CancelFunc }

func (cancelOnStart) Queued(int)      {}
func (o cancelOnStart) Started()      { o.cancel() }
func (cancelOnStart) Activity(string) {}

// A call that ends while its background interaction is being created
// cancels the interaction once created, rather than leave it running.
func TestInteractionCancelledWhileCreated(t *testing.T) {
	t.Parallel()
	f := interactionFixture(t, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, err := f.b.Run(ctx, backend.Turn{Prompt: "forever [[hold]]", Model: fakeapi.InteractionsOnlyModel, Observer: cancelOnStart{cancel}})
	wantKind(t, err, backend.KindCancelled, 0)
	var created, cancelled string
	for _, r := range f.fake.Requests() {
		switch r.Method {
		case fakeapi.MethodInteractionCreate:
			created = r.Interaction
		case fakeapi.MethodInteractionCancel:
			cancelled = r.Interaction
		}
	}
	if created == "" || cancelled != created {
		t.Errorf("created %q, cancelled %q", created, cancelled)
	}
}

// thinking_mode reaches a model on the Interactions API as its
// thinking_level: the levels of the same names as they are, max as high
// and off as minimal, each change said in the notes.
func TestInteractionThinkingLevel(t *testing.T) {
	t.Parallel()
	for mode, want := range map[string]struct{ level, note string }{
		"minimal": {"minimal", ""},
		"medium":  {"medium", ""},
		"high":    {"high", ""},
		"max":     {"high", "thinking_mode: max sent as high"},
		"off":     {"minimal", "thinking_mode: off sent as minimal"},
	} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			f := interactionFixture(t, Options{})
			a := f.mustRun(backend.Turn{Prompt: "think [[steps:0]]", Model: fakeapi.InteractionsOnlyModel, ThinkingMode: mode})
			c := f.creates()
			if len(c) != 1 {
				t.Fatalf("%d creates", len(c))
			}
			if gc, _ := c[0]["generation_config"].(map[string]any); gc["thinking_level"] != want.level {
				t.Errorf("generation_config %+v, want thinking_level %s", gc, want.level)
			}
			noted := slices.ContainsFunc(a.NotApplied, func(n string) bool { return strings.HasPrefix(n, "thinking_mode") })
			if want.note == "" && noted || want.note != "" &&
				!slices.ContainsFunc(a.NotApplied, func(n string) bool { return strings.HasPrefix(n, want.note) }) {
				t.Errorf("notes %v, want %q", a.NotApplied, want.note)
			}
		})
	}
}

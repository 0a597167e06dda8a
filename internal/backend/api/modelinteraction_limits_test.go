package api

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// A turn that runs as a model interaction is held to the model's input
// limit from the model list, as a generateContent turn is: one too long
// is refused before any interaction is created, the conversation
// unchanged; one that fits is counted and sent.
func TestInteractionTurnOverTheInputLimit(t *testing.T) {
	t.Parallel()
	over := strings.Repeat("word ", fakeapi.TinyModelLimit+1)
	t.Run("interactions-only model", func(t *testing.T) {
		t.Parallel()
		f := newFixture(t, Options{InteractionPoll: time.Millisecond})
		deep := fakeapi.InteractionsOnly()
		deep.InputTokenLimit = fakeapi.TinyModelLimit
		f.fake.SetModels(append(fakeapi.DefaultModels(), deep))
		_, err := f.run(backend.Turn{Prompt: over, Model: fakeapi.InteractionsOnlyModel})
		wantKind(t, err, backend.KindInput, 0, "more than the 60 tokens model "+fakeapi.InteractionsOnlyModel+" takes in")
		if c := f.creates(); len(c) != 0 {
			t.Fatalf("an interaction was created for a turn over the limit: %+v", c)
		}
		a := f.mustRun(backend.Turn{Prompt: strings.Repeat("x", 200), Model: fakeapi.InteractionsOnlyModel})
		if n := countRequests(f.fake); n != 2 || len(f.creates()) != 1 || a.Text == "" {
			t.Fatalf("%d countTokens, %d creates, answer %+v; want the long turn counted and sent", n, len(f.creates()), a)
		}
	})
	t.Run("server-side history", func(t *testing.T) {
		t.Parallel()
		f := interactionFixture(t, Options{ServerHistory: true, Model: fakeapi.TinyModel})
		a := f.mustRun(backend.Turn{Prompt: "hello"})
		if len(f.creates()) != 1 {
			t.Fatalf("the first turn did not run as an interaction: %d creates", len(f.creates()))
		}
		_, err := f.run(backend.Turn{Session: a.SessionID, Prompt: over})
		wantKind(t, err, backend.KindInput, 0, "more than the 60 tokens model "+fakeapi.TinyModel+" takes in")
		if len(f.creates()) != 1 || len(f.streams()) != 0 || f.turns(a.SessionID) != 1 {
			t.Fatalf("a turn over the limit was sent (%d creates, %d streams) or recorded (%d turns)",
				len(f.creates()), len(f.streams()), f.turns(a.SessionID))
		}
	})
}

// With server-side history and a fallback model, a turn whose
// interaction the API refuses to create for its model's quota goes
// through generateContent, where the exhausted quota goes to the
// fallback model, and the answer says both; the next turn resends the
// conversation. Without a fallback model the quota's error is the
// turn's, as before; an interactions-only model's turn does not fall
// back.
func TestInteractionQuotaFallsBack(t *testing.T) {
	t.Parallel()
	const pro = "gemini-2.5-pro"
	f := interactionFixture(t, Options{ServerHistory: true, FallbackModel: "flash"})
	f.fake.ExhaustQuota(pro, &fakeapi.Quota{Daily: true, RetryDelay: "0.01s"})
	a := f.mustRun(backend.Turn{Prompt: "hello", Model: "pro"})
	if a.Model != newestFlash || a.FallbackFrom != pro || a.Interaction != "" ||
		!slices.ContainsFunc(a.NotApplied, func(n string) bool { return strings.HasPrefix(n, "server-side history: the Gemini API refused") }) {
		t.Fatalf("answer %+v", a)
	}
	if c := f.creates(); len(c) != 1 || c[0]["model"] != pro {
		t.Fatalf("the creates %+v, want the one refused", c)
	}
	if got := strings.Join(f.streamModels(), " "); got != pro+" "+newestFlash {
		t.Fatalf("generateContent asked %s, want the asked model, then the fallback", got)
	}
	b := f.mustRun(backend.Turn{Session: a.SessionID, Prompt: "again"})
	if c := f.creates(); len(c) != 2 || c[1]["model"] != newestFlash || c[1]["previous_interaction_id"] != nil || b.Interaction == "" {
		t.Fatalf("the next turn: %+v, creates %+v", b, c)
	}

	f.restart(Options{ServerHistory: true, InteractionPoll: time.Millisecond})
	n := len(f.streams())
	_, err := f.run(backend.Turn{Prompt: "hello", Model: "pro"})
	wantKind(t, err, backend.KindAPI, 429, fakeapi.QuotaMessage)
	if len(f.streams()) != n {
		t.Fatal("without a fallback model the turn went through generateContent")
	}

	f.restart(Options{FallbackModel: "flash", InteractionPoll: time.Millisecond})
	f.fake.ExhaustQuota(fakeapi.InteractionsOnlyModel, &fakeapi.Quota{Daily: true})
	_, err = f.run(backend.Turn{Prompt: "prove it", Model: fakeapi.InteractionsOnlyModel})
	wantKind(t, err, backend.KindAPI, 429, fakeapi.QuotaMessage)
	if len(f.streams()) != n {
		t.Fatal("an interactions-only model's turn fell back")
	}
}

package api

import (
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

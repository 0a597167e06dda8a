package api

import (
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

func TestContextTooLong(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Model: fakeapi.TinyModel})
	// Short enough in bytes that no count is needed.
	a := f.mustRun(backend.Turn{Prompt: "short"})
	if n := countRequests(f.fake); n != 0 {
		t.Fatalf("%d countTokens requests for a short conversation", n)
	}
	// Long in bytes, few in tokens: counted, then sent.
	long := strings.Repeat("x", 200)
	f.mustRun(backend.Turn{Prompt: long, Session: a.SessionID})
	if n := countRequests(f.fake); n != 1 {
		t.Fatalf("%d countTokens requests, want 1", n)
	}
	// Too many tokens: refused before sending, the conversation unchanged.
	words := strings.Repeat("word ", fakeapi.TinyModelLimit)
	sent := len(f.streams())
	_, err := f.run(backend.Turn{Prompt: words, Session: a.SessionID, SystemPrompt: "sys"})
	// The history is "short", its answer, the 200 x's, its answer, and the
	// new prompt, plus the system instruction.
	n := 1 + fakeapi.CountTokens(fakeapi.Answer(fakeapi.TinyModel, 1, "", "short")) + 1 +
		fakeapi.CountTokens(fakeapi.Answer(fakeapi.TinyModel, 3, "", long)) + fakeapi.TinyModelLimit + 1
	wantKind(t, err, backend.KindInput, 0, "is "+itoa(n)+" tokens", "more than the 60 tokens model gemini-tiny-test takes in", "start a new conversation with chat")
	if len(f.streams()) != sent {
		t.Fatal("a conversation too long was sent")
	}
	if f.turns(a.SessionID) != 2 {
		t.Fatal("a refused turn changed the conversation")
	}
}

func countRequests(s *fakeapi.Server) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Method == fakeapi.MethodCountTokens {
			n++
		}
	}
	return n
}

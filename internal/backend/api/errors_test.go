package api

import (
	"context"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// TestStatus400 checks a refused request: no retry, and the conversation
// is left as it was.
func TestStatus400(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	a := f.mustRun(backend.Turn{Prompt: "hi"})
	_, err := f.run(backend.Turn{Prompt: "[[status:400]]", Session: a.SessionID})
	wantKind(t, err, backend.KindAPI, 400, "refused the request (400 INVALID_ARGUMENT: fake error 400)")
	if n := len(f.streams()); n != 2 {
		t.Fatalf("%d stream requests, want 2 (no retry of a 400)", n)
	}
	if f.turns(a.SessionID) != 1 {
		t.Fatal("a failed turn changed the conversation")
	}
}

func TestAuthError(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	_, err := f.run(backend.Turn{Prompt: "[[status:403]]"})
	wantKind(t, err, backend.KindAuth, 403, "refused the credentials", "Gemini API key from GEMINI_API_KEY", "GEMINI_API_KEY or GOOGLE_API_KEY")
	if n := len(f.streams()); n != 1 {
		t.Fatalf("%d stream requests, want 1 (no retry of a 403)", n)
	}
}

// TestBadKey: the Gemini API answers a bad key with 400 API_KEY_INVALID,
// which the backend reports as an auth error naming the credentials it
// accepts, from Check as from a turn (whose model list request fails
// first), and without retrying.
func TestBadKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.fake.RequireKey("another-key")
	err := f.b.Check(context.Background())
	wantKind(t, err, backend.KindAuth, 400, "refused the credentials (400 INVALID_ARGUMENT: "+fakeapi.BadKeyMessage,
		"using Gemini API key from GEMINI_API_KEY", "GEMINI_API_KEY or GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI")
	_, err = f.run(backend.Turn{Prompt: "hi"})
	wantKind(t, err, backend.KindAuth, 400, "refused the credentials")
	if n := len(f.fake.Requests()); n != 2 {
		t.Fatalf("%d requests, want 2 (one list each, no stream, no retry)", n)
	}
	f.fake.RequireKey("test-key")
	f.mustRun(backend.Turn{Prompt: "hi"})
}

func TestSafetyBlocks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	_, err := f.run(backend.Turn{Prompt: "[[block:SAFETY]]"})
	wantKind(t, err, backend.KindInput, 0, "blocked the prompt (SAFETY)")
	_, err = f.run(backend.Turn{Prompt: "[[finish:SAFETY]]"})
	wantKind(t, err, backend.KindEmpty, 0, "stopped the answer for safety (finish reason SAFETY)")
	_, err = f.run(backend.Turn{Prompt: "[[finish:STOP]]"})
	wantKind(t, err, backend.KindEmpty, 0, "answered no text (finish reason STOP)")
	if n := f.hist.appends.Load(); n != 0 {
		t.Fatalf("blocked answers left %d turns", n)
	}
}

func TestUnreachable(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	url := f.fake.URL()
	f.fake.Close()
	f.restart(Options{BaseURL: url, Retries: -1})
	_, err := f.run(backend.Turn{Prompt: "hi"})
	wantKind(t, err, backend.KindFailed, 0, "could not be reached")
}

package api

import (
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/api/interact"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// The Backend's Interactions client talks to the Backend's endpoint with
// its key, through its guarded HTTP client.
func TestInteractionsClientUsesBackendEndpoint(t *testing.T) {
	f := newFixture(t, Options{})
	f.fake.RequireKey("test-key")
	c, err := f.b.Interactions()
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.StartAgent(geminitest.Context(t), interact.AgentRequest{Input: "q [[steps:0]]"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Get(geminitest.Context(t), r.ID)
	if err != nil || got.Text != fakeapi.ReportText("q [[steps:0]]") {
		t.Fatalf("%+v %v", got, err)
	}
	// An answer past the guard's cap is refused by the guard itself.
	r, _ = c.StartAgent(geminitest.Context(t), interact.AgentRequest{Input: "q [[steps:0]] [[report-bytes:9000000]]"})
	if _, err := c.Get(geminitest.Context(t), r.ID); err == nil || !strings.Contains(err.Error(), "this server's cap") {
		t.Fatalf("an answer past the cap: %v, want the guard's error", err)
	}
}

func TestInteractionsClientRefusesVertex(t *testing.T) {
	f := newFixture(t, Options{})
	f.restart(Options{Getenv: func(k string) string {
		switch k {
		case "GOOGLE_GENAI_USE_VERTEXAI":
			return "1"
		case "GOOGLE_API_KEY":
			return "k"
		case "GOOGLE_VERTEX_BASE_URL":
			return f.fake.URL()
		}
		return ""
	}})
	_, err := f.b.Interactions()
	wantKind(t, err, backend.KindAuth, 0, "takes a Gemini API key", "Vertex AI")
}

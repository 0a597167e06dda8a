package interact

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// TestAgentContext: an agent's context goes as content blocks after the
// query (text, then documents inline in base64), which the fake's report
// echoes; context over its bounds, or a document of a type the API does
// not take, is refused before anything is sent.
func TestAgentContext(t *testing.T) {
	s, c := newFake(t)
	ctx := geminitest.Context(t)
	pdf := []byte("%PDF-1.4 fake")
	first, err := c.StartAgent(ctx, AgentRequest{Input: "q [[steps:0]]", Context: []string{"## Files\na.go"},
		Documents: []Document{{MIMEType: "application/pdf", Data: pdf}}})
	if err != nil {
		t.Fatal(err)
	}
	seen := pollDone(t, c, first.ID)
	want := fakeapi.ReportText("q [[steps:0]]") + fakeapi.ContextEcho([]string{"## Files\na.go"},
		[]string{fmt.Sprintf("application/pdf, %d bytes, sha256 %x", len(pdf), sha256.Sum256(pdf))})
	if got := seen[len(seen)-1].Text; got != want {
		t.Errorf("the report:\n%s\nwant:\n%s", got, want)
	}
	before := len(s.Requests())
	for _, r := range []AgentRequest{
		{Input: "q", Context: []string{strings.Repeat("x", MaxContextBytes)}},
		{Input: "q", Documents: make([]Document, MaxDocuments+1)},
		{Input: "q", Documents: []Document{{MIMEType: "image/png", Data: []byte("png")}}},
		{Input: "q", Documents: []Document{{MIMEType: "application/pdf", Data: make([]byte, MaxDocumentBytes+1)}}},
	} {
		if _, err := c.StartAgent(ctx, r); err == nil {
			t.Errorf("context of %d texts and %d documents was taken", len(r.Context), len(r.Documents))
		}
	}
	if n := len(s.Requests()); n != before {
		t.Errorf("%d requests sent for refused context", n-before)
	}
}

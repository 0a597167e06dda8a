package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestExpertLongAnswersArePaged: a codereview or precommit answer too long
// for one result comes as chat's do, its first page then the tool's
// sections, the rest through chat-page; and the result does not carry the
// answer twice: the structured content holds what was read from it, not
// the answer itself.
func TestExpertLongAnswersArePaged(t *testing.T) {
	t.Parallel()
	e := newExpertEnv(t)
	e.project(t)
	repo := e.repo(t)
	e.write(t, "repo/app.go", "package app\n\nconst paged = true\n")
	git(t, repo, "add", "app.go")
	cs := e.stdio(t, "--max-answer-bytes", "20000")
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"codereview", map[string]any{"files": []string{"src/main.go"}, "context": "[[bytes:50000]] a long review"}},
		{"precommit", map[string]any{"path": "repo", "original_request": "[[bytes:50000]] a long check"}},
	} {
		res, err := callExpert(t, cs, c.tool, c.args)
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", c.tool, err, res)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		answerID, _ := res.Meta["answerId"].(string)
		pages, _ := res.Meta["pages"].(float64)
		if answerID == "" || pages < 3 || !strings.Contains(text, "Call chat-page with answerId") || !strings.Contains(text, "\n## Metadata\n- tool: "+c.tool) {
			t.Fatalf("%s: a 50,000-byte answer at --max-answer-bytes 20000 was not paged (%v):\n%.400s…", c.tool, res.Meta, text)
		}
		if len(text) > 25000 {
			t.Errorf("%s: the first result's text is %d bytes", c.tool, len(text))
		}
		sc, _ := json.Marshal(res.StructuredContent)
		if strings.Contains(string(sc), "filler line") || len(sc) > 2000 {
			t.Errorf("%s: the structured content carries the answer again (%d bytes): %.300s", c.tool, len(sc), sc)
		}
		whole, _, _ := strings.Cut(text, "\n\n[gemini-mcp-server:")
		for p := 2; p <= int(pages); p++ {
			res, err := callExpert(t, cs, "chat-page", map[string]any{"answerId": answerID, "page": p})
			if err != nil || res.IsError {
				t.Fatalf("chat-page %d: %v %+v", p, err, res)
			}
			page, _, _ := strings.Cut(res.Content[0].(*mcp.TextContent).Text, "\n\n[gemini-mcp-server:")
			whole += page
		}
		streams := e.streams()
		if want := streams[len(streams)-1].Answer; whole != want {
			t.Errorf("%s: the pages make %d bytes, want the %d of the answer", c.tool, len(whole), len(want))
		}
	}
}

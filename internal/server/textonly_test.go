package server

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/render"
)

// textsOnly is what a client that shows its model only the text content
// (Claude Code) passes on: the text items, without _meta.
func (h *harness) textsOnly(name string, args map[string]any) ([]string, bool) {
	h.t.Helper()
	texts, _, isErr := h.callMetaAll(name, args)
	return texts, isErr
}

var uuidInText = regexp.MustCompile(`sessionId: ([0-9a-f-]{36})`)

// TestSessionIDInText checks that a model that sees only the text can
// continue a session by id, paged answers included, and that the answer's
// own text item stays exactly Gemini's answer.
func TestSessionIDInText(t *testing.T) {
	t.Parallel()
	h := newHarness(t, options{sessionIDInText: true, maxAnswerBytes: 1000})
	texts, isErr := h.textsOnly("chat", map[string]any{"prompt": "remember 42"})
	if isErr || len(texts) != 2 || !strings.HasPrefix(texts[0], "fake-gemini turn=1 ") {
		t.Fatalf("chat: %q", texts)
	}
	m := uuidInText.FindStringSubmatch(strings.Join(texts, "\n"))
	if m == nil || texts[1] != render.SessionNote(m[1]) {
		t.Fatalf("no sessionId in the text: %q", texts)
	}
	texts, isErr = h.textsOnly("chat-reply", map[string]any{"prompt": "what was it?", "sessionId": m[1]})
	if isErr || len(texts) != 2 || !strings.HasPrefix(texts[0], "fake-gemini turn=2 ") || texts[1] != render.SessionNote(m[1]) {
		t.Fatalf("chat-reply by the id from the text: %q", texts)
	}
	// Paged: every page names the session.
	texts, isErr = h.textsOnly("chat-reply", map[string]any{"prompt": "[[stdout:2500]] long", "sessionId": m[1]})
	if isErr || len(texts) != 2 || texts[1] != render.SessionNote(m[1]) {
		t.Fatalf("first page: %d items, last %q", len(texts), texts[len(texts)-1])
	}
	answerID := regexp.MustCompile(`answerId "([0-9a-f-]{36})"`).FindStringSubmatch(texts[0])
	if answerID == nil {
		t.Fatalf("no answerId in the first page: %q", texts[0])
	}
	texts, isErr = h.textsOnly("chat-page", map[string]any{"answerId": answerID[1], "page": 2})
	if isErr || len(texts) != 2 || texts[1] != render.SessionNote(m[1]) {
		t.Fatalf("second page: %q", texts)
	}
	// Failures carry no note.
	if texts, isErr := h.textsOnly("chat", map[string]any{"prompt": "[[exit:41]]"}); !isErr || len(texts) != 1 {
		t.Fatalf("failure: %q", texts)
	}

	// Switched off, the id is in _meta only.
	off := newHarness(t)
	if texts, _ := off.textsOnly("chat", map[string]any{"prompt": "x"}); len(texts) != 1 {
		t.Fatalf("switched off: %q", texts)
	}
}

// callMetaAll calls a tool and returns its texts and _meta, however many
// text items it has.
func (h *harness) callMetaAll(name string, args map[string]any) ([]string, mcp.Meta, bool) {
	h.t.Helper()
	res, err := h.client.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		h.t.Fatalf("%s: %v", name, err)
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return texts, res.Meta, res.IsError
}

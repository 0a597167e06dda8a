package tools

import (
	"container/list"
	"context"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/gemini"
)

// DefaultMaxAnswerBytes is the largest answer returned in one result.
// Clients cap tool results (Claude Code near 25,000 tokens, roughly
// 75–100 KB of text), and a capped result is silently cut.
const DefaultMaxAnswerBytes = 60000

// keptAnswers is how many paged answers are kept for chat-page, newest
// first.
const keptAnswers = 32

// pager keeps the pages of answers too large for one result, so that a
// client can fetch them in turn with chat-page. Pages live in memory:
// after a restart, the session (and the answer in its history) remain,
// but the pages must be asked for again.
type pager struct {
	mu    sync.Mutex
	order *list.List // of string ids, newest at the front
	pages map[string]*pagedAnswer
}

type pagedAnswer struct {
	sessionID string
	pages     []string
	elem      *list.Element
}

func (p *pager) put(sessionID string, pages []string) string {
	id := gemini.NewUUID()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pages == nil {
		p.pages, p.order = map[string]*pagedAnswer{}, list.New()
	}
	a := &pagedAnswer{sessionID: sessionID, pages: pages, elem: p.order.PushFront(id)}
	p.pages[id] = a
	for p.order.Len() > keptAnswers {
		old := p.order.Remove(p.order.Back()).(string)
		delete(p.pages, old)
	}
	return id
}

func (p *pager) get(id string) (*pagedAnswer, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	a, ok := p.pages[id]
	if ok {
		p.order.MoveToFront(a.elem)
	}
	return a, ok
}

// splitPages cuts s into pages of at most max bytes, at a line break in the
// second half of a page when there is one, else at a character boundary.
func splitPages(s string, max int) []string {
	var pages []string
	for len(s) > max {
		cut := max
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		if cut == 0 { // max is smaller than one character
			_, cut = utf8.DecodeRuneInString(s)
		}
		if nl := strings.LastIndexByte(s[:cut], '\n'); nl >= max/2 {
			cut = nl + 1
		}
		pages = append(pages, s[:cut])
		s = s[cut:]
	}
	return append(pages, s)
}

// pageResult is the result for page n (1-based) of a paged answer.
func (d *Deps) pageResult(id string, a *pagedAnswer, n int) *mcp.CallToolResult {
	text := a.pages[n-1]
	if n < len(a.pages) {
		text += fmt.Sprintf("\n\n[gemini-mcp-server: the answer is too long for one result; this is page %d of %d. "+
			"Call chat-page with answerId %q and page %d for the next part.]", n, len(a.pages), id, n+1)
	} else {
		text += fmt.Sprintf("\n\n[gemini-mcp-server: end of the answer, page %d of %d.]", n, len(a.pages))
	}
	meta := mcp.Meta{"answerId": id, "page": n, "pages": len(a.pages)}
	if a.sessionID != "" {
		meta["sessionId"] = a.sessionID
	}
	out := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, Meta: meta}
	d.addSessionNote(out, a.sessionID)
	return out
}

func pageTool() *mcp.Tool {
	return &mcp.Tool{
		Name: "chat-page",
		Description: "Fetch the next page of a Gemini answer that was too long for one result. " +
			"Use it only when a chat or chat-reply result ends with a note naming an answerId and a page.",
		InputSchema: &jsonschema.Schema{
			Type: "object",
			Properties: map[string]*jsonschema.Schema{
				"answerId": stringProp("The answerId from the note at the end of the previous page."),
				"page":     {Type: "integer", Description: "The page to fetch, from 2 up to the number of pages."},
			},
			Required: []string{"answerId", "page"},
		},
		Annotations: &mcp.ToolAnnotations{Title: "Next page of a Gemini answer", ReadOnlyHint: true, IdempotentHint: true},
	}
}

// PageInput is chat-page's arguments.
type PageInput struct {
	AnswerID string `json:"answerId"`
	Page     int    `json:"page"`
}

func (d *Deps) chatPage(_ context.Context, req *mcp.CallToolRequest, in PageInput) (*mcp.CallToolResult, any, error) {
	if err := checkArgs(req, "answerId", "page"); err != nil {
		return failure(err), nil, nil
	}
	a, ok := d.pages.get(strings.ToLower(strings.TrimSpace(in.AnswerID)))
	if !ok {
		return failure(fmt.Errorf("unknown or expired answerId %q: this server keeps the pages of its %d most recent long answers, until it restarts. Ask again with chat-reply on the session to get the answer anew", in.AnswerID, keptAnswers)), nil, nil
	}
	if in.Page < 1 || in.Page > len(a.pages) {
		return failure(fmt.Errorf("page %d does not exist: answer %s has pages 1 to %d", in.Page, in.AnswerID, len(a.pages))), nil, nil
	}
	return d.pageResult(strings.ToLower(strings.TrimSpace(in.AnswerID)), a, in.Page), nil, nil
}

package tools

import (
	"container/list"
	"context"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// DefaultMaxAnswerBytes is the largest answer returned in one result.
// Clients cap tool results (Claude Code near 25,000 tokens, roughly
// 75–100 KB of text), and a capped result is silently cut.
const DefaultMaxAnswerBytes = 60000

// keptAnswers is how many paged answers are kept for chat-page, newest
// first.
const keptAnswers = 32

// DefaultMaxPagedBytes bounds the bytes of all kept pages together, so that
// a few huge answers cannot grow the server without limit. It matches the
// default --max-output-bytes: the largest answer a call can return fits.
const DefaultMaxPagedBytes = 32 << 20

// pager keeps the pages of answers too large for one result, so that a
// client can fetch them in turn with chat-page. Pages live in memory:
// after a restart, the session (and the answer in its history) remain,
// but the pages must be asked for again.
type pager struct {
	mu    sync.Mutex
	order *list.List // of string ids, newest at the front
	pages map[string]*pagedAnswer
	bytes int // of all kept pages
}

type pagedAnswer struct {
	sessionID string
	pages     []string
	bytes     int
	// dropped is how many bytes at the end of an answer larger than the
	// whole budget were not kept.
	dropped int
	elem    *list.Element
}

// put keeps pages (an answer of total bytes) within budget bytes in all,
// evicting the oldest answers first. An answer larger than the whole
// budget keeps its first pages only, and says so in its notes.
func (p *pager) put(sessionID string, pages []string, budget int) string {
	id := session.NewUUID()
	total := 0
	for _, pg := range pages {
		total += len(pg)
	}
	a := &pagedAnswer{sessionID: sessionID, pages: pages, bytes: total}
	if total > budget {
		kept, n := 0, 0
		for kept < len(pages) && (kept == 0 || n+len(pages[kept]) <= budget) {
			n += len(pages[kept])
			kept++
		}
		// Copies, so that the whole answer the pages were cut from can be
		// freed.
		a.pages = make([]string, kept)
		for i := range kept {
			a.pages[i] = strings.Clone(pages[i])
		}
		a.bytes, a.dropped = n, total-n
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pages == nil {
		p.pages, p.order = map[string]*pagedAnswer{}, list.New()
	}
	for p.order.Len() > 0 && (p.order.Len() >= keptAnswers || p.bytes+a.bytes > budget) {
		old := p.order.Remove(p.order.Back()).(string)
		p.bytes -= p.pages[old].bytes
		delete(p.pages, old)
	}
	a.elem = p.order.PushFront(id)
	p.pages[id] = a
	p.bytes += a.bytes
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
	lost := ""
	if a.dropped > 0 {
		lost = fmt.Sprintf(" The answer is %d bytes, more than this server keeps for paging: only its first %d pages (%d bytes) are kept, the last %d bytes are lost. "+
			"To get the rest, ask with chat-reply for the part after page %d, or for a shorter answer.", a.bytes+a.dropped, len(a.pages), a.bytes, a.dropped, len(a.pages))
	}
	switch {
	case n < len(a.pages):
		text += fmt.Sprintf("\n\n[gemini-mcp-server: the answer is too long for one result; this is page %d of %d. "+
			"Call chat-page with answerId %q and page %d for the next part.%s]", n, len(a.pages), id, n+1, firstOnly(n, lost))
	case lost != "":
		text += fmt.Sprintf("\n\n[gemini-mcp-server: the answer is cut here, page %d of %d.%s]", n, len(a.pages), lost)
	default:
		text += fmt.Sprintf("\n\n[gemini-mcp-server: end of the answer, page %d of %d.]", n, len(a.pages))
	}
	meta := mcp.Meta{"answerId": id, "page": n, "pages": len(a.pages)}
	if a.dropped > 0 {
		meta["droppedBytes"] = a.dropped
	}
	if a.sessionID != "" {
		meta["sessionId"] = a.sessionID
	}
	out := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, Meta: meta}
	d.addSessionNote(out, a.sessionID)
	return out
}

// firstOnly returns note for page 1 and nothing for later pages: the first
// page warns, the last kept page repeats the warning where the answer
// stops.
func firstOnly(n int, note string) string {
	if n == 1 {
		return note
	}
	return ""
}

func pageTool() *mcp.Tool {
	return &mcp.Tool{
		Name: "chat-page",
		Description: "Fetch the next page of a Gemini answer that was too long for one result. " +
			"Use it only when a chat or chat-reply result ends with a note naming an answerId and a page.",
		InputSchema: inputSchema[PageInput](),
		Annotations: &mcp.ToolAnnotations{Title: "Next page of a Gemini answer", ReadOnlyHint: true, IdempotentHint: true},
	}
}

// PageInput is chat-page's arguments; its tags are chat-page's input
// schema.
type PageInput struct {
	AnswerID string `json:"answerId" jsonschema:"The answerId from the note at the end of the previous page."`
	Page     int    `json:"page" jsonschema:"The page to fetch, from 2 up to the number of pages."`
}

func (d *Deps) chatPage(_ context.Context, req *mcp.CallToolRequest, in PageInput) (*mcp.CallToolResult, any, error) {
	if err := checkArgs(req); err != nil {
		return failure(err), nil, nil
	}
	a, ok := d.pages.get(strings.ToLower(strings.TrimSpace(in.AnswerID)))
	if !ok {
		return failure(fmt.Errorf("unknown or expired answerId %q: this server keeps the pages of its %d most recent long answers (fewer when they are large), until it restarts. Ask again with chat-reply on the session to get the answer anew", in.AnswerID, keptAnswers)), nil, nil
	}
	if in.Page < 1 || in.Page > len(a.pages) {
		return failure(fmt.Errorf("page %d does not exist: answer %s has pages 1 to %d", in.Page, in.AnswerID, len(a.pages))), nil, nil
	}
	return d.pageResult(strings.ToLower(strings.TrimSpace(in.AnswerID)), a, in.Page), nil, nil
}

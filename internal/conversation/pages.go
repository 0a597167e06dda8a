package conversation

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/identity"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/render"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
)

// pageAnswer keeps text, an answer too long for one result, in the session
// store as pages for chat-page, and returns its first page. The pages live
// as long as the session (any server process sharing the store serves
// them), or until the store drops the oldest answers to stay within its
// budget. When the store cannot keep them, the first page still comes
// back, with a note saying how to get the rest.
func (d *Service) pageAnswer(ctx context.Context, owner, sessionID, text string, saved bool) *mcp.CallToolResult {
	pages := splitPages(text, d.o.MaxAnswerBytes)
	a := session.PagedAnswer{ID: session.NewUUID(), SessionID: sessionID, Owner: owner, Pages: pages, Created: d.o.Now()}
	kept, n := 0, 0
	for kept < len(pages) && (kept == 0 || n+len(pages[kept]) <= d.o.MaxPagedBytes) {
		n += len(pages[kept])
		kept++
	}
	if kept < len(pages) {
		// Copies, so that the whole answer the pages were cut from can be
		// freed.
		a.Pages = make([]string, kept)
		for i := range kept {
			a.Pages[i] = strings.Clone(pages[i])
		}
		a.Dropped = len(text) - n
	}
	if err := d.o.Store.PutAnswer(ctx, a); err != nil {
		d.o.Log.Warn("keeping an answer's pages", "session", sessionID, "bytes", len(text), "err", err)
		out := d.pageResult(a.ID, session.PagedAnswer{SessionID: sessionID, Pages: pages[:1], Dropped: len(text) - len(pages[0])}, 1)
		how := "ask with chat-reply for the part after this one"
		if !saved {
			// The note after the answer says when chat-reply can.
			how = "ask with chat-reply for the part after this one, once the session can be continued (see the note below)"
		}
		out.Content[0] = &mcp.TextContent{Text: pages[0] + fmt.Sprintf("\n\n[gemini-mcp-server: the answer is too long for one result, and its other pages could not be kept (%v): "+
			"this first page of %d is all there is of it. To get the rest, %s.]", err, len(pages), how)}
		delete(out.Meta, "answerId")
		return out
	}
	d.o.Log.Info("answer paged", "answer", a.ID, "bytes", len(text), "pages", len(pages))
	return d.pageResult(a.ID, a, 1)
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
func (d *Service) pageResult(id string, a session.PagedAnswer, n int) *mcp.CallToolResult {
	text := a.Pages[n-1]
	lost := ""
	if a.Dropped > 0 {
		kept := 0
		for _, p := range a.Pages {
			kept += len(p)
		}
		lost = fmt.Sprintf(" The answer is %d bytes, more than this server keeps for paging: only its first %d pages (%d bytes) are kept, the last %d bytes are lost. "+
			"To get the rest, ask with chat-reply for the part after page %d, or for a shorter answer.", kept+a.Dropped, len(a.Pages), kept, a.Dropped, len(a.Pages))
	}
	switch {
	case n < len(a.Pages):
		text += fmt.Sprintf("\n\n[gemini-mcp-server: the answer is too long for one result; this is page %d of %d. "+
			"Call chat-page with answerId %q and page %d for the next part.%s]", n, len(a.Pages), id, n+1, firstOnly(n, lost))
	case lost != "":
		text += fmt.Sprintf("\n\n[gemini-mcp-server: the answer is cut here, page %d of %d.%s]", n, len(a.Pages), lost)
	default:
		text += fmt.Sprintf("\n\n[gemini-mcp-server: end of the answer, page %d of %d.]", n, len(a.Pages))
	}
	meta := mcp.Meta{"answerId": id, "page": n, "pages": len(a.Pages)}
	if a.Dropped > 0 {
		meta["droppedBytes"] = a.Dropped
	}
	if a.SessionID != "" {
		meta["sessionId"] = a.SessionID
	}
	out := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, Meta: meta}
	d.addSessionNote(out, a.SessionID)
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

// Page is page n (1-based) of the paged answer answerID, for chat-page,
// read by who: the answer of another token's session is as unknown to
// it as one never kept.
func (d *Service) Page(ctx context.Context, who identity.Who, answerID string, n int) (*mcp.CallToolResult, error) {
	if err := d.acc.Identified(who); err != nil {
		return nil, err
	}
	id := strings.ToLower(strings.TrimSpace(answerID))
	if !session.IsUUID(id) {
		return nil, fmt.Errorf("answerId %q is not an answer id: pass the answerId from the note at the end of the previous page", msg.Clip(answerID, 80))
	}
	a, ok, err := d.o.Store.GetAnswer(ctx, id)
	if err != nil {
		return nil, toolerr.StoreError(err)
	}
	if ok && !d.acc.MayRead(a.Owner, who) {
		d.o.Log.Info("refused the pages of another client's answer", "answer", id)
		ok = false
	}
	if !ok {
		return nil, fmt.Errorf("unknown or expired answerId %q: this server keeps the pages of long answers as long as their session (--session-ttl), "+
			"but drops the oldest when they take too much room. Ask again with chat-reply on the session to get the answer anew", answerID)
	}
	if n < 1 || n > len(a.Pages) {
		return nil, fmt.Errorf("page %d does not exist: answer %s has pages 1 to %d", n, answerID, len(a.Pages))
	}
	return d.pageResult(id, a, n), nil
}

// PageText pages text, an answer no turn of a session made (research's
// report), as Outcome.Paged pages a turn's: its pages are owner's, and
// live the store's session TTL. When the store cannot keep them, ok is
// false and the caller keeps text whole: no session can ask for the rest.
func (d *Service) PageText(ctx context.Context, owner, text string) (first string, meta mcp.Meta, ok bool) {
	first, meta, ok = d.paged(ctx, owner, "", text, true)
	if ok && meta["answerId"] == nil {
		// The store could not keep the pages, and no session can ask
		// for the rest: the text stays whole.
		return "", nil, false
	}
	return first, meta, ok
}

// paged pages text (Outcome.Paged): when text is longer than one result may
// be, it keeps its pages for chat-page as chat's answers are kept, and
// returns the first page with the note that says how to get the next,
// and the paging's facts for _meta (answerId, page, pages, and
// droppedBytes when the store keeps less). ok is false when text fits in
// one result. saved says whether the turn was recorded.
func (d *Service) paged(ctx context.Context, owner, sessionID, text string, saved bool) (first string, meta mcp.Meta, ok bool) {
	if len(text) <= d.o.MaxAnswerBytes {
		return "", nil, false
	}
	out := d.pageAnswer(context.WithoutCancel(ctx), owner, sessionID, text, saved)
	meta = mcp.Meta{}
	for _, k := range []string{"answerId", "page", "pages", "droppedBytes"} {
		if v, ok := out.Meta[k]; ok {
			meta[k] = v
		}
	}
	return out.Content[0].(*mcp.TextContent).Text, meta, true
}

// addSessionNote appends the sessionId as a text item of its own, after
// the answer, so that the answer's text stays exactly Gemini's.
func (d *Service) addSessionNote(out *mcp.CallToolResult, sessionID string) {
	if d.o.SessionIDInText && sessionID != "" {
		out.Content = append(out.Content, &mcp.TextContent{Text: render.SessionNote(sessionID)})
	}
}

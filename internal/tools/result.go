package tools

import (
	"context"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/render"
)

// result is chat's and chat-reply's result of an answer: its text (paged
// when it is too long for one result, see conversation.Outcome.Paged),
// the sessionId, usage, tuning not applied, an incomplete answer and an
// unsaved turn said in _meta and, where the model reads it, in the text.
func (d *Deps) result(ctx context.Context, o conversation.Outcome) *mcp.CallToolResult {
	res, unsaved := o.Answer, o.Unsaved
	out := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Text}}}
	if first, meta, ok := o.Paged(ctx); ok {
		// Never cut silently: the rest waits for chat-page.
		out.Content[0], out.Meta = &mcp.TextContent{Text: first}, meta
	}
	if res.SessionID != "" {
		if out.Meta == nil {
			out.Meta = mcp.Meta{}
		}
		out.Meta["sessionId"] = res.SessionID
		if d.Conv.SessionIDInText() {
			out.Content = append(out.Content, &mcp.TextContent{Text: render.SessionNote(res.SessionID)})
		}
	}
	if res.Usage != nil || len(res.NotApplied) > 0 || res.Model != "" {
		if out.Meta == nil {
			out.Meta = mcp.Meta{}
		}
		if res.Model != "" {
			out.Meta["model"] = res.Model
		}
		if res.Usage != nil {
			out.Meta["usage"] = res.Usage
		}
		if len(res.NotApplied) > 0 {
			// The turn was answered without this tuning: say so rather
			// than fail.
			out.Meta["notApplied"] = res.NotApplied
		}
	}
	if res.Incomplete != "" {
		// Said in the text, where the model reads it, and in _meta.
		out.Content = append(out.Content, &mcp.TextContent{Text: incompleteNote(res.Incomplete)})
		if out.Meta == nil {
			out.Meta = mcp.Meta{}
		}
		out.Meta["incomplete"] = true
	}
	if res.FinishReason != "" {
		if out.Meta == nil {
			out.Meta = mcp.Meta{}
		}
		out.Meta["finishReason"] = res.FinishReason
	}
	render.AddBuiltins(out, res)
	render.AddFallback(out, res)
	render.AddInteraction(out, res)
	if unsaved != "" {
		// The note saying what became of the session replaces the one
		// that says to pass its id to chat-reply.
		out.Content = slices.DeleteFunc(out.Content, func(c mcp.Content) bool {
			t, ok := c.(*mcp.TextContent)
			return ok && res.SessionID != "" && t.Text == render.SessionNote(res.SessionID)
		})
	}
	render.AddUnsaved(out, unsaved)
	return out
}

// incompleteNote is the text item after an answer that was cut short;
// why says how and what became of the session.
func incompleteNote(why string) string {
	return "[gemini-mcp-server: the answer above is INCOMPLETE. " + why + "]"
}

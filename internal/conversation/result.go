package conversation

import (
	"context"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// Result is the chat tools' result of an answer Run returned: its text
// (paged when it is too long for one result, see Page), the sessionId,
// usage, tuning not applied, an incomplete answer and an unsaved turn
// said in _meta and, where the model reads it, in the text.
func (d *Service) Result(ctx context.Context, res *backend.Answer, unsaved string) *mcp.CallToolResult {
	var out *mcp.CallToolResult
	if len(res.Text) > d.o.MaxAnswerBytes {
		// Never cut silently: the rest waits for chat-page.
		out = d.pageAnswer(context.WithoutCancel(ctx), res.SessionID, res.Text, unsaved == "")
	} else {
		out = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Text}}}
		if res.SessionID != "" {
			out.Meta = mcp.Meta{"sessionId": res.SessionID}
		}
		d.addSessionNote(out, res.SessionID)
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
		out.Content = append(out.Content, &mcp.TextContent{Text: IncompleteNote(res.Incomplete)})
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
	AddBuiltins(out, res)
	AddFallback(out, res)
	if unsaved != "" {
		// The note saying what became of the session replaces the one
		// that says to pass its id to chat-reply.
		out.Content = slices.DeleteFunc(out.Content, func(c mcp.Content) bool {
			t, ok := c.(*mcp.TextContent)
			return ok && res.SessionID != "" && t.Text == SessionNote(res.SessionID)
		})
	}
	AddUnsaved(out, unsaved)
	return out
}

// AddUnsaved adds to out, a result of every tool, the note Run returned
// when the answer came but its turn could not be kept (unsaved; ""
// adds nothing): the answer is paid for and complete, so it is returned,
// not turned into an error, with a note the model cannot miss, and
// _meta.sessionSaved false.
func AddUnsaved(out *mcp.CallToolResult, unsaved string) {
	if unsaved == "" {
		return
	}
	out.Content = append(out.Content, &mcp.TextContent{Text: unsaved})
	if out.Meta == nil {
		out.Meta = mcp.Meta{}
	}
	out.Meta["sessionSaved"] = false
}

// IncompleteNote is the text item after an answer that was cut short;
// why says how and what became of the session.
func IncompleteNote(why string) string {
	return "[gemini-mcp-server: the answer above is INCOMPLETE. " + why + "]"
}

// addSessionNote appends the sessionId as a text item of its own, after
// the answer, so that the answer's text stays exactly Gemini's.
func (d *Service) addSessionNote(out *mcp.CallToolResult, sessionID string) {
	if d.o.SessionIDInText && sessionID != "" {
		out.Content = append(out.Content, &mcp.TextContent{Text: SessionNote(sessionID)})
	}
}

// SessionNote is the text item naming a result's session.
func SessionNote(sessionID string) string {
	return "sessionId: " + sessionID + " (pass it to chat-reply to continue this conversation)"
}

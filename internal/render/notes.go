package render

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// AddUnsaved adds to out, a result of every tool, the note a
// conversation.Outcome carries when the answer came but its turn could not
// be kept (unsaved; "" adds nothing): the answer is paid for and complete,
// so it is returned, not turned into an error, with a note the model
// cannot miss, and _meta.sessionSaved false.
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

// SessionNote is the text item naming a result's session.
func SessionNote(sessionID string) string {
	return "sessionId: " + sessionID + " (pass it to chat-reply to continue this conversation)"
}

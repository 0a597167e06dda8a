package render

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// AddFallback says in out, a result of every tool, that the answer came
// from the fallback model because the asked model's quota was exhausted:
// _meta.fallbackFrom names the asked model (_meta.model is the one that
// answered), and a text item after the answer says so where the model
// reads it. An answer from the asked model adds nothing.
func AddFallback(out *mcp.CallToolResult, res *backend.Answer) {
	if res.FallbackFrom == "" {
		return
	}
	if out.Meta == nil {
		out.Meta = mcp.Meta{}
	}
	out.Meta["fallbackFrom"] = res.FallbackFrom
	out.Content = append(out.Content, &mcp.TextContent{Text: FallbackNote(res.FallbackFrom, res.Model)})
}

// FallbackNote is the text item after an answer that the fallback model
// gave.
func FallbackNote(asked, answered string) string {
	return "[gemini-mcp-server: the quota of " + asked + " is exhausted, so " + answered +
		" (--fallback-model) gave this answer; a chat-reply without a model goes on with " + answered + ".]"
}

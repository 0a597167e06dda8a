package render

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// AddInteraction names in out's _meta.interactionId the Interactions API
// interaction that answered res, when Google keeps it (server-side
// history): the caller's own turn, so that it knows what Google holds of
// its conversation. No tool takes the id back: a conversation goes on by
// its sessionId. An answer with no kept interaction adds nothing.
func AddInteraction(out *mcp.CallToolResult, res *backend.Answer) {
	if res.Interaction == "" {
		return
	}
	if out.Meta == nil {
		out.Meta = mcp.Meta{}
	}
	out.Meta["interactionId"] = res.Interaction
}

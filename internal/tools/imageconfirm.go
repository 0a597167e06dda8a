package tools

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/imagesave"
)

// saveField is the one field of the form that asks the user to confirm a
// save.
const saveField = "save"

// saveConfirm is the confirmation of the image tool's saves: a form
// elicitation to the client that made req, a yes only when the user
// accepts it with save true. It is nil, with why, when the client cannot
// be asked: it declared no form elicitation, or it speaks protocol
// 2026-07-28 or later, where a server asks only through a tool's result
// (which the tool calls' confirmations use, see internal/conversation's
// confirm.go, and a save does not yet).
func saveConfirm(req *mcp.CallToolRequest) (imagesave.Confirm, string) {
	if req == nil || req.Session == nil {
		return nil, "the client cannot ask its user to confirm a save (it declared no elicitation)"
	}
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil || (caps.Elicitation.Form == nil && caps.Elicitation.URL != nil) {
		return nil, "the client cannot ask its user to confirm a save (it declared no form elicitation)"
	}
	if req.ProtocolVersion() >= "2026-07-28" {
		return nil, "the client speaks protocol " + req.ProtocolVersion() + ", in which this server cannot yet ask its user to confirm a save"
	}
	return func(ctx context.Context, question string) (bool, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Mode: "form", Message: question,
			RequestedSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					saveField: map[string]any{"type": "boolean", "title": "Save the image?"},
				},
				"required": []string{saveField},
			}})
		if err != nil {
			return false, err
		}
		return res != nil && res.Action == "accept" && res.Content[saveField] == true, nil
	}, ""
}

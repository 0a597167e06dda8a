package tools

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/imagesave"
)

// saveField is the one field of the form that asks the user to confirm a
// save.
const saveField = "save"

// saveInputID names the save's question among a call's input requests
// (protocol 2026-07-28 and later).
const saveInputID = "confirm-save"

// saveConfirm is the confirmation of the image tool's saves: a form put
// to the user of the client that made the call, the way a downstream
// tool call is confirmed (conversation.Outcome.Ask: an elicitation/create
// request, or from protocol 2026-07-28 on an input request of the result,
// answered by the client's next call), a yes only when the user accepts it
// with save true. It is nil, with why, when the client cannot be asked.
func saveConfirm(ask conversation.Asker) (imagesave.Confirm, string) {
	if ask == nil {
		return nil, "the client cannot ask its user to confirm a save (it declared no form elicitation)"
	}
	return func(ctx context.Context, question string) (bool, error) {
		res, err := ask(ctx, saveInputID, &mcp.ElicitParams{Mode: "form", Message: question,
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

package tools

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
)

// AddPage adds chat-page to s.
func AddPage(s *mcp.Server, d *Deps) { s.AddTool(pageTool(), handle(d.chatPage)) }

func pageTool() *mcp.Tool {
	return &mcp.Tool{
		Name: "chat-page",
		Description: "Fetch the next page of a Gemini answer that was too long for one result. " +
			"Use it only when a result (of chat, chat-reply or an expert tool such as codereview) ends with a note naming an answerId and a page.",
		InputSchema: inputTypeOf[PageInput]().sc.CloneSchemas(),
		Annotations: &mcp.ToolAnnotations{Title: "Next page of a Gemini answer", ReadOnlyHint: true, IdempotentHint: true},
	}
}

// PageInput is chat-page's arguments; its tags are chat-page's input
// schema.
type PageInput struct {
	AnswerID string `json:"answerId" jsonschema:"The answerId from the note at the end of the previous page."`
	Page     int    `json:"page" jsonschema:"The page to fetch, from 2 up to the number of pages."`
}

func (d *Deps) chatPage(ctx context.Context, req *mcp.CallToolRequest, in PageInput) (*mcp.CallToolResult, any, error) {
	out, err := d.Conv.Page(ctx, d.Conv.CallOf(ctx, req).Who, in.AnswerID, in.Page)
	if err != nil {
		return toolerr.Failure(err), nil, nil
	}
	return out, nil, nil
}

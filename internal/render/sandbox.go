package render

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// ThoughtsHeading starts the text item that holds Gemini's thought
// summaries, after the answer and apart from it.
const ThoughtsHeading = "[gemini-mcp-server: Gemini's thought summary, which is not part of its answer]\n"

// addSandbox adds to out, a result of every tool, what came with the
// answer res besides its text:
//
//   - the code Gemini ran in the API's sandbox and its results, in
//     _meta.codeExecution ({language, code, outcome, output} each, in
//     order; the answer's text shows them in their place);
//   - the images its code made, as image items after the answer;
//   - its thought summaries (include_thoughts), in _meta.thoughts and as
//     a text item of their own under ThoughtsHeading, never in the
//     answer's text.
func addSandbox(out *mcp.CallToolResult, res *backend.Answer) {
	if len(res.CodeRuns) == 0 && len(res.Images) == 0 && res.Thoughts == "" {
		return
	}
	if out.Meta == nil {
		out.Meta = mcp.Meta{}
	}
	if len(res.CodeRuns) > 0 {
		out.Meta["codeExecution"] = res.CodeRuns
	}
	for _, im := range res.Images {
		out.Content = append(out.Content, &mcp.ImageContent{MIMEType: im.MIMEType, Data: im.Data})
	}
	if res.Thoughts != "" {
		out.Meta["thoughts"] = res.Thoughts
		out.Content = append(out.Content, &mcp.TextContent{Text: ThoughtsHeading + res.Thoughts})
	}
}

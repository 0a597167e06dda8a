// Package render turns what a turn gave into the parts of a tool's result
// every tool adds the same way: the sources and URLs of the Gemini API's
// built-in tools, the code it ran, its images and thoughts (AddBuiltins),
// the note of a fallback model's answer (AddFallback), the interaction
// Google keeps of the turn (AddInteraction), the note of an answer whose
// turn could not be kept (AddUnsaved), and the session's (SessionNote).
// The chat tools (internal/tools) and the expert tools (internal/expert)
// use it.
package render

import (
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// AddBuiltins adds to out, a result of every tool, what the Gemini API's
// built-in tools gave the answer res:
//
//   - for an answer grounded in Google Search, a text item after the
//     answer, "Sources:" and a numbered line per source ([1] title: URI),
//     a resource_link item per source (its URI, its title as name), and
//     _meta.grounding (the queries run, the sources, and the search
//     suggestions' renderedContent);
//   - for an answer that read URLs, _meta.urls (each URL's retrieval
//     status), and a text item naming the URLs that could not be read;
//   - the code Gemini ran, the images it made and its thoughts (see
//     addSandbox).
func AddBuiltins(out *mcp.CallToolResult, res *backend.Answer) {
	defer addSandbox(out, res)
	if g := res.Grounding; g != nil {
		if out.Meta == nil {
			out.Meta = mcp.Meta{}
		}
		out.Meta["grounding"] = g
		if len(g.Sources) > 0 {
			var b strings.Builder
			b.WriteString("Sources:")
			for i, s := range g.Sources {
				title := s.Title
				if title == "" {
					title = s.URI
				}
				fmt.Fprintf(&b, "\n[%d] %s: %s", i+1, oneLine(title), s.URI)
			}
			out.Content = append(out.Content, &mcp.TextContent{Text: b.String()})
			for _, s := range g.Sources {
				name := s.Title
				if name == "" {
					name = s.URI
				}
				out.Content = append(out.Content, &mcp.ResourceLink{URI: s.URI, Name: name})
			}
		}
	}
	if len(res.URLs) > 0 {
		if out.Meta == nil {
			out.Meta = mcp.Meta{}
		}
		out.Meta["urls"] = res.URLs
		var failed []string
		for _, u := range res.URLs {
			if u.Status != "URL_RETRIEVAL_STATUS_SUCCESS" {
				failed = append(failed, fmt.Sprintf("%s (%s)", u.URL, strings.TrimPrefix(u.Status, "URL_RETRIEVAL_STATUS_")))
			}
		}
		if len(failed) > 0 {
			out.Content = append(out.Content, &mcp.TextContent{Text: "[gemini-mcp-server: the Gemini API could not read " +
				strings.Join(failed, ", ") + "; the answer does not draw on it]"})
		}
	}
}

// oneLine keeps a title on its line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

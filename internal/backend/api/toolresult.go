package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/genai"
)

// The functions here turn a downstream tool's result into the parts that
// answer Gemini's function call, as the Gemini CLI 0.61.0 builds them
// (mcp-tool.ts transformMcpContentToParts and isMCPToolError,
// generateContentResponseUtilities.ts convertToFunctionResponse), so that
// Gemini reads the same thing whichever of the two hosts ran the tool.

// wrapUntrusted marks text a downstream server wrote as data, not
// instructions, as the CLI does (and as its system prompt explains to the
// model); a closing tag inside cannot end the block early.
func wrapUntrusted(text string) string {
	text = strings.ReplaceAll(text, "</untrusted_context>", "&lt;/untrusted_context&gt;")
	return "<untrusted_context>\n" + text + "\n</untrusted_context>"
}

// llmPart is one piece of a tool's result for the model: text, or inline
// data when blob is set.
type llmPart struct {
	text string
	blob *genai.Blob
}

// contentParts converts an MCP result's content blocks; tool is the tool's
// own name on its server, which the CLI puts in its labels. Unknown block
// types are dropped, as the CLI drops them; structuredContent is not sent.
func contentParts(tool string, content []mcp.Content) []llmPart {
	var out []llmPart
	media := func(kind, mime string, data []byte) {
		out = append(out,
			llmPart{text: fmt.Sprintf("[Tool '%s' provided the following %s data with mime-type: %s]", tool, kind, mime)},
			llmPart{blob: &genai.Blob{MIMEType: mime, Data: data}})
	}
	for _, c := range content {
		switch c := c.(type) {
		case *mcp.TextContent:
			out = append(out, llmPart{text: wrapUntrusted(c.Text)})
		case *mcp.ImageContent:
			media("image", c.MIMEType, c.Data)
		case *mcp.AudioContent:
			media("audio", c.MIMEType, c.Data)
		case *mcp.EmbeddedResource:
			r := c.Resource
			switch {
			case r == nil:
			case r.Text != "":
				out = append(out, llmPart{text: wrapUntrusted(r.Text)})
			case len(r.Blob) > 0:
				mime := r.MIMEType
				if mime == "" {
					mime = "application/octet-stream"
				}
				out = append(out,
					llmPart{text: fmt.Sprintf("[Tool '%s' provided the following embedded resource with mime-type: %s]", tool, mime)},
					llmPart{blob: &genai.Blob{MIMEType: mime, Data: r.Blob}})
			}
		case *mcp.ResourceLink:
			name := c.Title
			if name == "" {
				name = c.Name
			}
			out = append(out, llmPart{text: fmt.Sprintf("Resource Link: %s at %s", name, c.URI)})
		}
	}
	return out
}

// supportsMultimodalResponse says whether model takes inline data inside a
// functionResponse; the CLI decides by name, as here. For other models the
// data goes in parts beside the functionResponse.
func supportsMultimodalResponse(model string) bool { return strings.HasPrefix(model, "gemini-3-") }

// resultParts returns the parts answering call fc with the parts of a
// successful result.
func resultParts(fc *genai.FunctionCall, parts []llmPart, model string) []*genai.Part {
	var texts []string
	var inline, stripped []*genai.Blob
	for _, p := range parts {
		switch {
		case p.blob == nil:
			texts = append(texts, p.text)
		case strings.HasPrefix(p.blob.MIMEType, "audio/") || strings.HasPrefix(p.blob.MIMEType, "video/"):
			stripped = append(stripped, p.blob)
		default:
			inline = append(inline, p.blob)
		}
	}
	if len(stripped) > 0 {
		var mimes []string
		for _, b := range stripped {
			if !slices.Contains(mimes, b.MIMEType) {
				mimes = append(mimes, b.MIMEType)
			}
		}
		note := fmt.Sprintf("[SYSTEM: Binary content (%s) stripped from response due to protocol limitations.]", strings.Join(mimes, ", "))
		texts = append([]string{note}, texts...)
	}
	fr := &genai.FunctionResponse{ID: fc.ID, Name: fc.Name, Response: map[string]any{}}
	if len(texts) > 0 {
		fr.Response["output"] = strings.Join(texts, "\n")
	} else if len(inline) > 0 {
		fr.Response["output"] = fmt.Sprintf("Binary content provided (%d item(s)).", len(inline))
	}
	out := []*genai.Part{{FunctionResponse: fr}}
	for _, b := range inline {
		if supportsMultimodalResponse(model) {
			fr.Parts = append(fr.Parts, &genai.FunctionResponsePart{InlineData: &genai.FunctionResponseBlob{MIMEType: b.MIMEType, Data: b.Data}})
		} else {
			out = append(out, &genai.Part{InlineData: b})
		}
	}
	return out
}

// errorPart answers call fc with an error Gemini reads: the call did not
// happen or failed.
func errorPart(fc *genai.FunctionCall, msg string) *genai.Part {
	return &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: fc.ID, Name: fc.Name, Response: map[string]any{"error": msg}}}
}

// toolErrorMessage is the CLI's message for a tool that reported an error
// (isError) or whose call failed: the call and the raw response, as JSON.
// tool is the tool's own name; response is the result, or for a failed
// call the CLI's {"error":{"message":…,"isError":true}}.
func toolErrorMessage(tool string, args map[string]any, response any) string {
	if args == nil {
		args = map[string]any{}
	}
	call := marshalPlain(map[string]any{"name": tool, "args": args})
	raw := marshalPlain([]any{map[string]any{"functionResponse": map[string]any{"name": tool, "response": response}}})
	return fmt.Sprintf("MCP tool '%s' reported tool error for function call: %s with response: %s", tool, call, raw)
}

// callResultParts answers call fc, which ran the downstream tool named tool
// and returned res, or err.
func callResultParts(fc *genai.FunctionCall, tool string, res *mcp.CallToolResult, err error, model string) []*genai.Part {
	switch {
	case err != nil:
		resp := map[string]any{"error": map[string]any{"message": err.Error(), "isError": true}}
		return []*genai.Part{errorPart(fc, toolErrorMessage(tool, fc.Args, resp))}
	case res == nil:
		return []*genai.Part{errorPart(fc, toolErrorMessage(tool, fc.Args, map[string]any{"error": map[string]any{"message": "no result", "isError": true}}))}
	case res.IsError:
		return []*genai.Part{errorPart(fc, toolErrorMessage(tool, fc.Args, res))}
	}
	return resultParts(fc, contentParts(tool, res.Content), model)
}

// marshalPlain is JSON as JavaScript's JSON.stringify writes it: no HTML
// escapes.
func marshalPlain(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("%v", v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

package expert

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
)

// Each expert tool is also an MCP prompt of the same name, with the
// tool's text arguments, so that clients which show prompts as slash
// commands (the Gemini CLI: /analyze …) offer the tools to their users.
// The prompt asks the client's model to call the tool with the arguments
// given; lists (files, focus_areas) are given as one argument, separated
// by commas or spaces.

// prompt is the MCP prompt of the tool.
func (sp *Tool) prompt() *mcp.Prompt {
	p := &mcp.Prompt{Name: sp.name, Title: sp.title, Description: sp.description}
	for _, a := range sp.props {
		if a.kind == "number" {
			continue // the prompts leave the sampling temperature out
		}
		desc := a.desc
		switch {
		case a.kind == "array":
			desc += " (separated by commas or spaces)"
		case len(a.enum) > 0:
			desc += fmt.Sprintf(" (default: %v)", a.def)
		case a.kind == "boolean":
			desc += fmt.Sprintf(" (true or false; default: %v)", a.def)
		}
		p.Arguments = append(p.Arguments, &mcp.PromptArgument{Name: a.name, Description: desc, Required: a.required})
	}
	return p
}

// getPrompt answers prompts/get: a user message asking for the tool call.
// Arguments are checked as the tool checks them, so that a mistake shows
// when the prompt is used rather than when the model calls the tool.
func (sp *Tool) getPrompt(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	args := map[string]any{}
	if req.Params != nil {
		for k, v := range req.Params.Arguments {
			p := sp.prop(k)
			if p == nil || strings.TrimSpace(v) == "" {
				args[k] = v // refused or dropped below, with the tool's message
				continue
			}
			switch p.kind {
			case "array":
				args[k] = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\t' })
			case "boolean":
				args[k] = strings.EqualFold(strings.TrimSpace(v), "true")
				if !strings.EqualFold(strings.TrimSpace(v), "true") && !strings.EqualFold(strings.TrimSpace(v), "false") {
					args[k] = v
				}
			default:
				args[k] = v
			}
		}
	}
	for k, v := range args {
		if s, ok := v.(string); ok && strings.TrimSpace(s) == "" && sp.prop(k) != nil && !sp.prop(k).required {
			delete(args, k)
		}
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	if _, err := parseArgs(sp.name, sp.schema(), raw, 0); err != nil {
		return nil, conversation.WireError(err)
	}
	pretty, _ := json.MarshalIndent(args, "", "  ")
	text := fmt.Sprintf("Call the %s tool (of gemini-mcp-server) with these arguments, then show me its answer:\n\n%s", sp.name, pretty)
	return &mcp.GetPromptResult{
		Description: sp.description,
		Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
	}, nil
}

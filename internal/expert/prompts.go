package expert

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
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
	sc := sp.schema()
	for _, name := range sc.PropertyOrder {
		a := sc.Properties[name]
		if a.Type == "number" || name == "background" {
			continue // the prompts leave the sampling temperature and background jobs out
		}
		desc := a.Description
		switch {
		case a.Type == "array":
			desc += " (separated by commas or spaces)"
		case len(a.Enum) > 0:
			desc += fmt.Sprintf(" (default: %v)", defaultOf(a))
		case a.Type == "boolean":
			desc += fmt.Sprintf(" (true or false; default: %v)", defaultOf(a))
		}
		p.Arguments = append(p.Arguments, &mcp.PromptArgument{Name: name, Description: desc, Required: slices.Contains(sc.Required, name)})
	}
	return p
}

// defaultOf is the default of the property p, as its value.
func defaultOf(p *jsonschema.Schema) any {
	var v any
	if err := json.Unmarshal(p.Default, &v); err != nil {
		panic(err) // the defaults are this package's literals
	}
	return v
}

// getPrompt answers prompts/get: a user message asking for the tool call.
// Arguments are checked as the tool checks them, so that a mistake shows
// when the prompt is used rather than when the model calls the tool.
func (sp *Tool) getPrompt(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	sc := sp.schema()
	args := map[string]any{}
	if req.Params != nil {
		for k, v := range req.Params.Arguments {
			p := sc.Properties[k]
			if p == nil || strings.TrimSpace(v) == "" {
				args[k] = v // refused or dropped below, with the tool's message
				continue
			}
			switch p.Type {
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
		if s, ok := v.(string); ok && strings.TrimSpace(s) == "" && sc.Properties[k] != nil && !slices.Contains(sc.Required, k) {
			delete(args, k)
		}
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	if err := sp.decodeArgs(raw, sp.input(), 0); err != nil {
		return nil, toolerr.WireError(err)
	}
	pretty, _ := json.MarshalIndent(args, "", "  ")
	text := fmt.Sprintf("Call the %s tool (of gemini-mcp-server) with these arguments, then show me its answer:\n\n%s", sp.name, pretty)
	return &mcp.GetPromptResult{
		Description: sp.description,
		Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}},
	}, nil
}

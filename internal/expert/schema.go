package expert

import (
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// prop is one argument of an expert tool, as the expert tools' specification lists it.
type prop struct {
	name     string
	kind     string // "string", "array" (of strings), "boolean" or "number"
	desc     string
	enum     []string
	def      any      // the specification's default, nil when it gives none
	min, max *float64 // a number's range
	required bool
	// label heads the argument's text in the prompt sent to Gemini; ""
	// leaves the argument out of the prompt (tuning, files, ids).
	label string
}

// Tool is one expert tool: its schema, as the specification writes it, the
// role Gemini takes for it, and its input struct, whose gather method is
// what the tool does beside sending its arguments (read files, or
// precommit's changes). Each is defined in a file of its own, and listed
// in the server's registry.
type Tool struct {
	name, title, description string
	props                    []prop
	// role is the system prompt: the specification's purpose of the tool, as
	// instructions to Gemini.
	role string
	// input returns a new input struct of the tool, which its arguments
	// are decoded into.
	input func() input
	// output, for a tool whose answers have one shape, is its
	// outputSchema, and structured the structuredContent of a result.
	output     func() *jsonschema.Schema
	structured func(o *output) map[string]any
}

// The arguments shared by every expert tool. continuation_id is written in
// the specification for analyze and chat only; every tool takes it here, since any
// tool must be able to continue a thread another one started. temperature
// is the specification's chat argument, taken by every tool as by chat, so that the
// API backend can apply it.
func thinkingMode(def string) prop {
	return prop{name: "thinking_mode", kind: "string", enum: backend.ThinkingModes, def: def,
		desc: "How much Gemini may think before it answers. On the Gemini API backend it becomes a thinking budget or level; " +
			"the Gemini CLI backends cannot set it per call, answer without it and say so in _meta.notApplied."}
}

var (
	continuationID = prop{name: "continuation_id", kind: "string",
		desc: "Thread continuation ID for multi-turn conversations: the continuation ID of an earlier result of any of this server's tools. " +
			"Gemini then sees that conversation's history, and files already sent in it are not sent again. Omit it to start a new thread."}
	temperature = prop{name: "temperature", kind: "number", min: ptr(backend.MinTemperature), max: ptr(backend.MaxTemperature),
		desc: "Optional: the sampling temperature, from 0 to 2. Omit it for the model's default. Applied by the Gemini API backend; " +
			"the Gemini CLI backends answer without it and say so in _meta.notApplied."}
	googleSearch = prop{name: "google_search", kind: "boolean", def: false,
		desc: "Optional: ground the answer in a Google Search that Gemini runs itself (Gemini API backend only; the Gemini CLI backends refuse it). " +
			"The sources follow the answer as a numbered list and as resource_link items, with the queries and the search suggestions in _meta.grounding."}
	codeExecution = prop{name: "code_execution", kind: "boolean", def: false,
		desc: "Optional: let Gemini write and run Python in Google's sandbox (Gemini API backend only; the Gemini CLI backends refuse it). " +
			"The code, its outcome and output appear in the answer and in _meta.codeExecution; images it made follow as image items."}
	reviewType = prop{name: "review_type", kind: "string", enum: []string{"full", "security", "performance", "quick"}, def: "full",
		desc: "The kind of review: full, security, performance or quick.", label: "Review type"}
)

func (s *Tool) prop(name string) *prop {
	for i := range s.props {
		if s.props[i].name == name {
			return &s.props[i]
		}
	}
	return nil
}

// schema is the tool's input schema. It leaves out additionalProperties
// and $schema, as chat's does (the Gemini CLI's schema sanitizer strips
// them); unknown arguments are refused by the tool itself.
func (s *Tool) schema() *jsonschema.Schema {
	sc := &jsonschema.Schema{Type: "object", Properties: map[string]*jsonschema.Schema{}}
	for _, p := range s.props {
		ps := &jsonschema.Schema{Type: p.kind, Description: p.desc}
		if p.kind == "array" {
			ps.Items = &jsonschema.Schema{Type: "string"}
		}
		ps.Minimum, ps.Maximum = p.min, p.max
		for _, e := range p.enum {
			ps.Enum = append(ps.Enum, e)
		}
		if p.def != nil {
			raw, err := json.Marshal(p.def)
			if err != nil {
				panic(err) // the defaults are this package's literals
			}
			ps.Default = raw
		}
		sc.Properties[p.name] = ps
		sc.PropertyOrder = append(sc.PropertyOrder, p.name)
		if p.required {
			sc.Required = append(sc.Required, p.name)
		}
	}
	return sc
}

// tool is the MCP tool the spec describes.
func (s *Tool) tool() *mcp.Tool {
	t := &mcp.Tool{
		Name: s.name,
		Description: s.description + " The result ends with ## Metadata, ## Files Processed and ## Continuation ID sections; " +
			"pass the continuation ID to any of this server's tools to continue the conversation.",
		InputSchema: s.schema(),
		Annotations: &mcp.ToolAnnotations{Title: s.title, ReadOnlyHint: true, OpenWorldHint: ptr(true)},
	}
	if s.output != nil {
		t.OutputSchema = s.output()
	}
	return t
}

func ptr[T any](v T) *T { return &v }

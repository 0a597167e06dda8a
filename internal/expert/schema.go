package expert

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/attach"
)

// Tool is one expert tool: its name and description, the role Gemini takes
// for it, and its input struct, which its input schema is generated from
// and whose gather method is what the tool does beside sending its
// arguments (read files, or precommit's changes). Each is defined in a
// file of its own, and listed in the server's registry.
type Tool struct {
	name, title, description string
	// role is the system prompt: the specification's purpose of the tool, as
	// instructions to Gemini.
	role string
	// input returns a new input struct of the tool, which its arguments
	// are decoded into.
	input func() input
	// extend adds to the schema generated from the input struct what its
	// tags cannot say: the specification's enums and defaults, a
	// number's range, an order other than the fields'.
	extend func(s *jsonschema.Schema)
	// output, for a tool whose answers have one shape, is its
	// outputSchema, and structured the structuredContent of a result.
	output     func() *jsonschema.Schema
	structured func(o *output) map[string]any

	once   sync.Once
	sc     *jsonschema.Schema
	fields map[string][]int // a property's field of the input struct (reflect's index)
}

// schema is the tool's input schema, generated once from its input struct
// and extend. It leaves out additionalProperties and $schema, as chat's
// does (the Gemini CLI's schema sanitizer strips them); unknown arguments
// are refused by the tool itself (decodeArgs). It is shared: not to be
// changed.
func (t *Tool) schema() *jsonschema.Schema {
	t.once.Do(t.generate)
	return t.sc
}

// generate makes the input schema and the index of the input struct's
// fields. The structs are this package's own, so an error is a
// programming error, which every test that lists the tools catches.
func (t *Tool) generate() {
	rt := reflect.TypeOf(t.input()).Elem()
	s, err := jsonschema.ForType(rt, nil)
	if err != nil {
		panic(fmt.Sprintf("expert: the input schema of %s: %v", t.name, err))
	}
	s.AdditionalProperties, s.Schema = nil, ""
	for _, p := range s.Properties {
		// An optional list or number (a nil slice, a pointer) is made
		// ["null", type], which the Gemini CLI's schema sanitizer does not
		// take: it is a value that may be left out.
		if len(p.Types) == 2 && p.Types[0] == "null" {
			p.Type, p.Types = p.Types[1], nil
		}
	}
	if t.extend != nil {
		t.extend(s)
	}
	if _, ok := t.input().(backgrounder); ok {
		withDefault(s, "background", false)
	}
	if _, ok := t.input().(retriever); ok {
		oneOf(s, attach.Field, attach.Off, attach.Modes...)
		property(s, attach.Field).Description = attach.Description
	}
	fields := map[string][]int{}
	for _, f := range reflect.VisibleFields(rt) {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && !f.Anonymous {
			fields[name] = f.Index
		}
	}
	t.sc, t.fields = s, fields
}

// property is the property name of s, which the tool's extend names: a
// missing one is a programming error.
func property(s *jsonschema.Schema, name string) *jsonschema.Schema {
	p := s.Properties[name]
	if p == nil {
		panic("expert: the schema has no property " + name)
	}
	return p
}

// oneOf gives the string property name of s its values and its default.
func oneOf(s *jsonschema.Schema, name, def string, values ...string) {
	p := property(s, name)
	for _, v := range values {
		p.Enum = append(p.Enum, v)
	}
	withDefault(s, name, def)
}

// withDefault gives the property name of s its default.
func withDefault(s *jsonschema.Schema, name string, def any) {
	raw, err := json.Marshal(def)
	if err != nil {
		panic(err) // the defaults are this package's literals
	}
	property(s, name).Default = raw
}

// commonSchema extends the schema of Common: thinking_mode's values and
// the tool's default, mode; temperature's range.
func commonSchema(s *jsonschema.Schema, mode string) {
	oneOf(s, "thinking_mode", mode, backend.ThinkingModes...)
	t := property(s, "temperature")
	t.Minimum, t.Maximum = ptr(backend.MinTemperature), ptr(backend.MaxTemperature)
}

// searchSchema extends the schema of Search: google_search is false
// unless given.
func searchSchema(s *jsonschema.Schema) { withDefault(s, "google_search", false) }

// sandboxSchema extends the schema of Sandbox: code_execution is false
// unless given.
func sandboxSchema(s *jsonschema.Schema) { withDefault(s, "code_execution", false) }

// reviewTypes are the values of review_type (codereview, precommit), whose
// default is the first.
var reviewTypes = []string{"full", "security", "performance", "quick"}

// moveAfter moves the property name of s after the property after in the
// schema's order.
func moveAfter(s *jsonschema.Schema, name, after string) {
	property(s, name)
	property(s, after)
	order := slices.DeleteFunc(slices.Clone(s.PropertyOrder), func(n string) bool { return n == name })
	i := slices.Index(order, after) + 1
	s.PropertyOrder = slices.Insert(order, i, name)
}

// tool is the MCP tool the spec describes.
func (t *Tool) tool() *mcp.Tool {
	mt := &mcp.Tool{
		Name: t.name,
		Description: t.description + " The result ends with ## Metadata, ## Files Processed and ## Continuation ID sections; " +
			"pass the continuation ID to any of this server's tools to continue the conversation.",
		InputSchema: t.schema().CloneSchemas(),
		Annotations: &mcp.ToolAnnotations{Title: t.title, ReadOnlyHint: true, OpenWorldHint: ptr(true)},
	}
	if t.output != nil {
		mt.OutputSchema = t.output()
	}
	return mt
}

func ptr[T any](v T) *T { return &v }

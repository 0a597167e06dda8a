package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/validate"
)

// The chat tools are added with raw handlers (handle): their arguments
// are decoded once (decodeArgs), straight into the tool's input struct,
// and checked against the schema generated from it, rather than decoded
// by the SDK into a map to validate, then into the struct, then again
// here to refuse unknown arguments and bad tuning. What a client sees of
// a bad argument is what the SDK's validation and this package's checks
// made of it: the tuning checks first, with their own message; then the
// schema's, in the SDK's words; then unknown arguments.

// typedHandler is a chat tool's handler, given its decoded arguments.
type typedHandler[In any] func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error)

// handle makes h a raw handler: it decodes the arguments into In, or
// answers with what is wrong with them, and returns h's result as the
// SDK's typed handlers return theirs.
func handle[In any](h typedHandler[In]) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		var in In
		if res := decodeArgs(req.Params.Arguments, &in); res != nil {
			return res, nil
		}
		res, _, err := h(ctx, req, in)
		if err != nil {
			if wire := (*jsonrpc.Error)(nil); errors.As(err, &wire) {
				return nil, wire
			}
			var errRes mcp.CallToolResult
			errRes.SetError(err)
			return &errRes, nil
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		return res, nil
	}
}

// handleOut is handle for a tool with structured results of type Out: the
// result carries h's output as its structuredContent (the zero Out when h
// returns none, as the SDK's typed handlers give it), and as its text
// when h gives none.
func handleOut[In, Out any](h func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, *Out, error)) mcp.ToolHandler {
	return handle(func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		res, out, err := h(ctx, req, in)
		if err != nil {
			return res, nil, err
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		if out == nil {
			out = new(Out)
		}
		raw, err := json.Marshal(out)
		if err != nil {
			return nil, nil, fmt.Errorf("marshaling output: %w", err)
		}
		res.StructuredContent = json.RawMessage(raw)
		if res.Content == nil {
			res.Content = []mcp.Content{&mcp.TextContent{Text: string(raw)}}
		}
		return res, nil, nil
	})
}

// outputSchema is the output schema of a tool whose structured results
// are of type Out, generated as the SDK generates it.
func outputSchema[Out any]() *jsonschema.Schema {
	s, err := jsonschema.For[Out](&jsonschema.ForOptions{})
	if err != nil {
		panic(fmt.Sprintf("tools: the output schema of %T: %v", *new(Out), err))
	}
	return s
}

// inputType is what decodeArgs needs of an input struct: its schema,
// which is the tool's, its fields by argument name, and whether it takes
// Tuning (chat's, chat-reply's).
type inputType struct {
	sc     *jsonschema.Schema
	fields map[string][]int
	tuned  bool
}

// inputTypes holds the inputType of each input struct.
var inputTypes sync.Map // reflect.Type → *inputType

func inputTypeOf[In any]() *inputType {
	t := reflect.TypeFor[In]()
	if v, ok := inputTypes.Load(t); ok {
		return v.(*inputType)
	}
	it := &inputType{sc: inputSchema[In](), fields: map[string][]int{}}
	for _, f := range reflect.VisibleFields(t) {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && !f.Anonymous {
			it.fields[name] = f.Index
		}
		if f.Anonymous && f.Type == reflect.TypeFor[Tuning]() {
			it.tuned = true
		}
	}
	if x, ok := any(new(In)).(interface{ extendSchema(*jsonschema.Schema) }); ok {
		x.extendSchema(it.sc)
	}
	v, _ := inputTypes.LoadOrStore(t, it)
	return v.(*inputType)
}

// decodeArgs decodes raw, a call's arguments, once (validate.Arguments)
// into in, each argument's value straight into its field. It returns the
// tool result a bad argument gets, or nil.
func decodeArgs[In any](raw json.RawMessage, in *In) *mcp.CallToolResult {
	it := inputTypeOf[In]()
	args, err := validate.Arguments(raw)
	if err != nil {
		return schemaError(fmt.Errorf("unmarshaling arguments: json: cannot unmarshal %q into Go value of type map[string]interface {}", raw))
	}
	if it.tuned {
		if err := checkTuning(args); err != nil {
			return toolerr.Failure(err)
		}
	}
	fields := reflect.ValueOf(in).Elem()
	for _, name := range it.sc.PropertyOrder {
		v, ok := args[name]
		if !ok {
			continue
		}
		p := it.sc.Properties[name]
		msg, err := decodeField(fields, it.fields[name], name, p, v)
		if err != nil {
			var res mcp.CallToolResult
			res.SetError(err)
			return &res
		}
		if msg != "" {
			return schemaError(fmt.Errorf("validating root: validating /properties/%s: %s", name, msg))
		}
	}
	var missing []string
	for _, name := range it.sc.Required {
		if _, ok := args[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return schemaError(fmt.Errorf("validating root: required: missing properties: %q", missing))
	}
	var unknown []string
	for k := range args {
		if it.sc.Properties[k] == nil {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return toolerr.Failure(fmt.Errorf("unknown argument %s; this tool takes %s", quoteUnknown(unknown), strings.Join(it.sc.PropertyOrder, ", ")))
	}
	return nil
}

// maxUnknownShown is how many unknown arguments an error names, each
// clipped to maxArgNameShown bytes: a client may send thousands, or one
// named by a megabyte.
const (
	maxUnknownShown = 5
	maxArgNameShown = 64
)

// quoteUnknown quotes the unknown argument names, sorted: the first
// maxUnknownShown of them, clipped, and how many more there are.
func quoteUnknown(names []string) string {
	shown := make([]string, 0, maxUnknownShown)
	for _, n := range names[:min(len(names), maxUnknownShown)] {
		shown = append(shown, msg.Clip(n, maxArgNameShown))
	}
	q := quoteAll(shown)
	if more := len(names) - len(shown); more > 0 {
		q += fmt.Sprintf(" and %d more", more)
	}
	return q
}

// schemaError is the result of arguments the schema refuses, as the
// SDK's validation words it.
func schemaError(err error) *mcp.CallToolResult {
	var res mcp.CallToolResult
	res.SetError(fmt.Errorf("validating \"arguments\": %w", err))
	return &res
}

// decodeField decodes v, the argument name of schema p, into its field
// of the input struct in, at index; it returns what the schema finds
// wrong with v, or an error for a value the schema takes but the field
// cannot hold (a whole number beyond int64), worded as the SDK's decoder
// words it.
func decodeField(in reflect.Value, index []int, name string, p *jsonschema.Schema, v json.RawMessage) (string, error) {
	f := in.FieldByIndex(index)
	switch p.Type {
	case "integer":
		// A whole number, however written (2.0 too), as the SDK took it.
		var n float64
		if string(v) == "null" || json.Unmarshal(v, &n) != nil {
			return typeMismatch(v, p.Type), nil
		}
		if _, frac := math.Modf(n); frac != 0 {
			return typeMismatch(v, p.Type), nil
		}
		if p.Minimum != nil && n < *p.Minimum {
			return fmt.Sprintf("minimum: %s is less than %f", new(big.Rat).SetFloat64(n), *p.Minimum), nil
		}
		if p.Maximum != nil && n > *p.Maximum {
			return fmt.Sprintf("maximum: %s is greater than %f", new(big.Rat).SetFloat64(n), *p.Maximum), nil
		}
		if n < math.MinInt64 || n >= math.MaxInt64 {
			return "", fmt.Errorf("json: cannot unmarshal number %s overflows into Go struct field %s.%s of type %s",
				strconv.FormatFloat(n, 'f', -1, 64), in.Type(), name, f.Type())
		}
		f.SetInt(int64(n))
		return "", nil
	case "array":
	default:
		if string(v) == "null" || json.Unmarshal(v, f.Addr().Interface()) != nil {
			return typeMismatch(v, p.Type), nil
		}
		return "", nil
	}
	// An array of strings, whose null entry would decode as "".
	var l []*string
	if string(v) != "null" && json.Unmarshal(v, &l) == nil {
		out := make([]string, len(l))
		for i, s := range l {
			if s == nil {
				return "validating /properties/" + name + "/items: " + typeMismatch(json.RawMessage("null"), "string"), nil
			}
			out[i] = *s
		}
		f.Set(reflect.ValueOf(out))
		return "", nil
	}
	// What is wrong, in the SDK's words: not an array, or an entry that
	// is not a string.
	var items []json.RawMessage
	if string(v) != "null" && json.Unmarshal(v, &items) == nil {
		for _, item := range items {
			if string(item) == "null" || json.Unmarshal(item, new(string)) != nil {
				return "validating /properties/" + name + "/items: " + typeMismatch(item, "string"), nil
			}
		}
	}
	return typeMismatch(v, p.Type), nil
}

// typeMismatch says that v is not of the JSON type want, in the words of
// the SDK's validation (github.com/google/jsonschema-go), which shows the
// value as Go formats it once decoded.
func typeMismatch(v json.RawMessage, want string) string {
	var x any
	_ = json.Unmarshal(v, &x) // v is a value of valid JSON
	return fmt.Sprintf("type: %v has type %q, want %q", reflect.ValueOf(x), jsonKind(x), want)
}

// jsonKind is the JSON type of a decoded value, as the SDK's validation
// names it: a number without a fraction is an integer.
func jsonKind(x any) string {
	switch x := x.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if _, frac := math.Modf(x); frac == 0 {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	default:
		return "object"
	}
}

// checkTuning refuses a temperature or thinking_mode outside what the
// tools take, with a message that says what to send instead. It runs
// before the schema's checks, whose message for a value out of range
// ("maximum: 3/1 is greater than 2.000000") would leave the caller
// guessing. Any spelling of their names that a case-insensitive decoder
// would take for them is checked: such a name, not an argument here, is
// refused either way, and this is the message that helps.
func checkTuning(args map[string]json.RawMessage) error {
	keys := make([]string, 0, 2)
	for k := range args {
		if strings.EqualFold(k, "temperature") || strings.EqualFold(k, "thinking_mode") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := args[k]
		if strings.EqualFold(k, "temperature") {
			var t float64
			if err := json.Unmarshal(v, &t); err != nil || string(v) == "null" ||
				math.IsNaN(t) || t < backend.MinTemperature || t > backend.MaxTemperature {
				return fmt.Errorf("temperature must be a number from %g to %g, not %s; omit it for the model's default",
					backend.MinTemperature, backend.MaxTemperature, msg.Clip(string(v), 100))
			}
			continue
		}
		var m string
		if err := json.Unmarshal(v, &m); err != nil || !slices.Contains(backend.ThinkingModes, m) {
			return fmt.Errorf("thinking_mode must be one of %s, not %s; omit it for the model's default",
				strings.Join(backend.ThinkingModes, ", "), msg.Clip(string(v), 100))
		}
	}
	return nil
}

package expert

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/validate"
)

// How many unknown arguments an error names, and how much of each name.
const (
	maxUnknownShown = 5
	maxArgNameShown = 64
)

// decodeArgs decodes raw, a call's arguments, once (validate.Arguments),
// into in, a new input struct of the tool, each argument checked against
// the tool's schema and its value decoded straight into its field, the
// schema's defaults filled in. It returns a toolerr.ValidationErrors
// listing every argument at fault, each with what to send instead. The
// SDK validates nothing for these tools: they are registered with raw
// handlers so that a bad argument is a JSON-RPC -32602 error with
// data.validation_errors, as the specification says, rather than a tool
// result. maxBytes bounds each text argument (0: no bound).
func (t *Tool) decodeArgs(raw json.RawMessage, in input, maxBytes int) error {
	sc := t.schema()
	args, err := validate.Arguments(raw)
	if err != nil {
		return toolerr.ValidationErrors{{Field: "arguments", Error: "the arguments must be a JSON object of " + argList(sc)}}
	}
	var errs toolerr.ValidationErrors
	var unknown []string
	for k := range args {
		if sc.Properties[k] == nil {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	// A client may send thousands, or one named by a megabyte: the first
	// few are named, clipped, and the rest counted.
	for _, k := range unknown[:min(len(unknown), maxUnknownShown)] {
		errs = append(errs, toolerr.FieldError{Field: msg.Clip(k, maxArgNameShown), Error: fmt.Sprintf("unknown argument; %s takes %s", t.name, argList(sc))})
	}
	if more := len(unknown) - maxUnknownShown; more > 0 {
		errs = append(errs, toolerr.FieldError{Field: "arguments", Error: fmt.Sprintf("%d more unknown arguments", more)})
	}
	fields := reflect.ValueOf(in).Elem()
	for _, name := range sc.PropertyOrder {
		p := sc.Properties[name]
		required := slices.Contains(sc.Required, name)
		v, given := args[name]
		if given && string(v) == "null" {
			given = false
		}
		if !given {
			switch {
			case required:
				errs = append(errs, toolerr.FieldError{Field: name, Error: "required: " + p.Description})
			case p.Default != nil:
				v, given = p.Default, true
			}
			if !given {
				continue
			}
		}
		if msg := set(fields.FieldByIndex(t.fields[name]), name, p, required, v, maxBytes); msg != "" {
			errs = append(errs, toolerr.FieldError{Field: name, Error: msg})
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// set checks one argument, named name, of schema p against p and decodes
// it into f, its field of the input struct; it returns what is wrong with
// it, or "". A number's schema gives its range (the tool's schema test
// checks that every one does).
func set(f reflect.Value, name string, p *jsonschema.Schema, required bool, v json.RawMessage, maxBytes int) string {
	switch p.Type {
	case "string":
		var s string
		if json.Unmarshal(v, &s) != nil {
			return fmt.Sprintf("must be a string, not %s", abbrev(v))
		}
		if len(p.Enum) > 0 && !slices.Contains(p.Enum, any(s)) {
			enum := make([]string, len(p.Enum))
			for i, e := range p.Enum {
				enum[i] = fmt.Sprint(e)
			}
			return fmt.Sprintf("must be one of %s, not %q", strings.Join(enum, ", "), msg.Clip(s, 100))
		}
		if required && strings.TrimSpace(s) == "" {
			return "is empty: " + p.Description
		}
		if err := validate.Text(name, s, maxBytes); err != nil {
			return err.Error()
		}
		f.SetString(s)
	case "array":
		var l []string
		if json.Unmarshal(v, &l) != nil {
			return fmt.Sprintf("must be an array of strings, not %s", abbrev(v))
		}
		if required && len(l) == 0 {
			return "is empty: " + p.Description
		}
		for i, s := range l {
			if strings.TrimSpace(s) == "" {
				return fmt.Sprintf("entry %d is empty: give a path, or leave the entry out", i)
			}
			if err := validate.Text(fmt.Sprintf("entry %d", i), s, maxBytes); err != nil {
				return err.Error()
			}
		}
		f.Set(reflect.ValueOf(l))
	case "boolean":
		var b bool
		if json.Unmarshal(v, &b) != nil {
			return fmt.Sprintf("must be true or false, not %s", abbrev(v))
		}
		f.SetBool(b)
	case "number":
		var n float64
		if json.Unmarshal(v, &n) != nil || math.IsNaN(n) || n < *p.Minimum || n > *p.Maximum {
			return fmt.Sprintf("must be a number from %g to %g, not %s; omit it for the model's default",
				*p.Minimum, *p.Maximum, abbrev(v))
		}
		f.Set(reflect.ValueOf(&n))
	}
	return ""
}

// argList names the arguments of the input schema sc, the required ones
// marked.
func argList(sc *jsonschema.Schema) string {
	names := make([]string, len(sc.PropertyOrder))
	for i, name := range sc.PropertyOrder {
		names[i] = name
		if slices.Contains(sc.Required, name) {
			names[i] += " (required)"
		}
	}
	return strings.Join(names, ", ")
}

// abbrev shows a bad value, shortened.
func abbrev(v json.RawMessage) string {
	const max = 40
	if len(v) > max {
		return string(v[:max]) + "…"
	}
	return string(v)
}

package expert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/validate"
)

// args are a call's arguments, checked against the tool's input schema,
// with the schema's defaults filled in.
type args struct {
	strs  map[string]string
	lists map[string][]string
	bools map[string]bool
	nums  map[string]float64
}

// decode fills in (the tool's input struct) with the checked arguments.
func (a *args) decode(in input) error {
	m := map[string]any{}
	for k, v := range a.strs {
		m[k] = v
	}
	for k, v := range a.lists {
		m[k] = v
	}
	for k, v := range a.bools {
		m[k] = v
	}
	for k, v := range a.nums {
		m[k] = v
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, in)
}

// parseArgs checks raw against the input schema sc of the tool named
// tool and returns the arguments, or a conversation.ValidationErrors
// listing every argument at fault, each with what to send instead. The
// SDK validates nothing for these tools: they are registered with raw
// handlers so that a bad argument is a JSON-RPC -32602 error with
// data.validation_errors, as the specification says, rather than a tool
// result. maxBytes bounds each text argument (0: no bound).
func parseArgs(tool string, sc *jsonschema.Schema, raw json.RawMessage, maxBytes int) (*args, error) {
	a := &args{strs: map[string]string{}, lists: map[string][]string{}, bools: map[string]bool{}, nums: map[string]float64{}}
	var in map[string]json.RawMessage
	if len(bytes.TrimSpace(raw)) > 0 && string(bytes.TrimSpace(raw)) != "null" {
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, conversation.ValidationErrors{{Field: "arguments", Error: "the arguments must be a JSON object of " + argList(sc)}}
		}
	}
	var errs conversation.ValidationErrors
	var unknown []string
	for k := range in {
		if sc.Properties[k] == nil {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		errs = append(errs, conversation.FieldError{Field: k, Error: fmt.Sprintf("unknown argument; %s takes %s", tool, argList(sc))})
	}
	for _, name := range sc.PropertyOrder {
		p := sc.Properties[name]
		required := slices.Contains(sc.Required, name)
		v, given := in[name]
		if given && string(v) == "null" {
			given = false
		}
		if !given {
			switch {
			case required:
				errs = append(errs, conversation.FieldError{Field: name, Error: "required: " + p.Description})
			case p.Default != nil:
				v, given = p.Default, true
			}
			if !given {
				continue
			}
		}
		if msg := a.set(name, p, required, v, maxBytes); msg != "" {
			errs = append(errs, conversation.FieldError{Field: name, Error: msg})
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return a, nil
}

// set checks one argument, named name, of schema p against p and keeps
// it; it returns what is wrong with it, or "". A number's schema gives
// its range (the tool's schema test checks that every one does).
func (a *args) set(name string, p *jsonschema.Schema, required bool, v json.RawMessage, maxBytes int) string {
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
			return fmt.Sprintf("must be one of %s, not %q", strings.Join(enum, ", "), s)
		}
		if required && strings.TrimSpace(s) == "" {
			return "is empty: " + p.Description
		}
		if err := validate.Text(name, s, maxBytes); err != nil {
			return err.Error()
		}
		a.strs[name] = s
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
		a.lists[name] = l
	case "boolean":
		var b bool
		if json.Unmarshal(v, &b) != nil {
			return fmt.Sprintf("must be true or false, not %s", abbrev(v))
		}
		a.bools[name] = b
	case "number":
		var f float64
		if json.Unmarshal(v, &f) != nil || math.IsNaN(f) || f < *p.Minimum || f > *p.Maximum {
			return fmt.Sprintf("must be a number from %g to %g, not %s; omit it for the model's default",
				*p.Minimum, *p.Maximum, abbrev(v))
		}
		a.nums[name] = f
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

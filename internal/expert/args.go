package expert

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/validate"
)

// args are a call's arguments, checked against the tool's spec, with the
// specification's defaults filled in.
type args struct {
	strs  map[string]string
	lists map[string][]string
	bools map[string]bool
	temp  *float64
}

func (a *args) str(name string) string    { return a.strs[name] }
func (a *args) list(name string) []string { return a.lists[name] }
func (a *args) boolean(name string) bool  { return a.bools[name] }
func (a *args) thinkingMode() string      { return a.strs["thinking_mode"] }
func (a *args) continuationID() string    { return a.strs["continuation_id"] }
func (a *args) temperature() *float64     { return a.temp }

// parseArgs checks raw against s and returns the arguments, or a
// conversation.ValidationErrors listing every argument at fault, each with what to
// send instead. The SDK validates nothing for these tools: they are
// registered with raw handlers so that a bad argument is a JSON-RPC
// -32602 error with data.validation_errors, as the specification says, rather
// than a tool result. maxBytes bounds each text argument (0: no bound).
func parseArgs(s *Tool, raw json.RawMessage, maxBytes int) (*args, error) {
	a := &args{strs: map[string]string{}, lists: map[string][]string{}, bools: map[string]bool{}}
	var in map[string]json.RawMessage
	if len(bytes.TrimSpace(raw)) > 0 && string(bytes.TrimSpace(raw)) != "null" {
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, conversation.ValidationErrors{{Field: "arguments", Error: "the arguments must be a JSON object of " + s.argList()}}
		}
	}
	var errs conversation.ValidationErrors
	var unknown []string
	for k := range in {
		if s.prop(k) == nil {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		errs = append(errs, conversation.FieldError{Field: k, Error: fmt.Sprintf("unknown argument; %s takes %s", s.name, s.argList())})
	}
	for _, p := range s.props {
		v, given := in[p.name]
		if given && string(v) == "null" {
			given = false
		}
		if !given {
			switch {
			case p.required:
				errs = append(errs, conversation.FieldError{Field: p.name, Error: "required: " + p.desc})
			case p.def != nil:
				switch d := p.def.(type) {
				case string:
					a.strs[p.name] = d
				case bool:
					a.bools[p.name] = d
				}
			}
			continue
		}
		if msg := a.set(p, v, maxBytes); msg != "" {
			errs = append(errs, conversation.FieldError{Field: p.name, Error: msg})
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return a, nil
}

// set checks and keeps one given argument; it returns what is wrong with
// it, or "".
func (a *args) set(p prop, v json.RawMessage, maxBytes int) string {
	switch p.kind {
	case "string":
		var s string
		if json.Unmarshal(v, &s) != nil {
			return fmt.Sprintf("must be a string, not %s", abbrev(v))
		}
		if len(p.enum) > 0 && !slices.Contains(p.enum, s) {
			return fmt.Sprintf("must be one of %s, not %q", strings.Join(p.enum, ", "), s)
		}
		if p.required && strings.TrimSpace(s) == "" {
			return "is empty: " + p.desc
		}
		if err := validate.Text(p.name, s, maxBytes); err != nil {
			return err.Error()
		}
		a.strs[p.name] = s
	case "array":
		var l []string
		if json.Unmarshal(v, &l) != nil {
			return fmt.Sprintf("must be an array of strings, not %s", abbrev(v))
		}
		if p.required && len(l) == 0 {
			return "is empty: " + p.desc
		}
		for i, s := range l {
			if strings.TrimSpace(s) == "" {
				return fmt.Sprintf("entry %d is empty: give a path, or leave the entry out", i)
			}
			if err := validate.Text(fmt.Sprintf("entry %d", i), s, maxBytes); err != nil {
				return err.Error()
			}
		}
		a.lists[p.name] = l
	case "boolean":
		var b bool
		if json.Unmarshal(v, &b) != nil {
			return fmt.Sprintf("must be true or false, not %s", abbrev(v))
		}
		a.bools[p.name] = b
	case "number":
		var f float64
		if json.Unmarshal(v, &f) != nil || math.IsNaN(f) || f < backend.MinTemperature || f > backend.MaxTemperature {
			return fmt.Sprintf("must be a number from %g to %g, not %s; omit it for the model's default",
				backend.MinTemperature, backend.MaxTemperature, abbrev(v))
		}
		a.temp = &f
	}
	return ""
}

// argList names the tool's arguments, the required ones marked.
func (s *Tool) argList() string {
	names := make([]string, len(s.props))
	for i, p := range s.props {
		names[i] = p.name
		if p.required {
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

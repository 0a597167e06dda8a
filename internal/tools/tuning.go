package tools

import (
	"github.com/google/jsonschema-go/jsonschema"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// Tuning is the optional per-call tuning chat and chat-reply take (the expert
// tools' temperature and thinking_mode). Its tags are part of both tools'
// input schemas; tuneSchema adds the range and the values they accept.
type Tuning struct {
	Temperature     *float64 `json:"temperature,omitempty" jsonschema:"Optional: the sampling temperature, from 0 to 2: lower is more focused and repeatable, higher more varied. Omit it for the model's default. Applied by the Gemini API backend; the Gemini CLI backends cannot set it per call, answer without it and say so in the result's _meta.notApplied."`
	ThinkingMode    string   `json:"thinking_mode,omitempty" jsonschema:"Optional: how much Gemini may think before it answers: off, minimal, low, medium, high or max. On the Gemini API backend it becomes a thinking budget of 0, 128, 2048, 8192, 16384 or 32768 tokens (Gemini 2.5 models, kept within the model's range; off is refused where a model cannot stop thinking, e.g. Gemini 2.5 Pro) or a thinking level (Gemini 3 models: off is the lowest, max is HIGH); any adjustment is reported in _meta.notApplied. The Gemini CLI backends cannot set it per call, answer without it and say so in _meta.notApplied."`
	IncludeThoughts bool     `json:"include_thoughts,omitempty" jsonschema:"Optional: also return Gemini's thought summaries (Gemini API backend), apart from the answer: in _meta.thoughts and a text item after it, never in the answer or the conversation's history. The Gemini CLI backends say so in _meta.notApplied."`
}

// extendSchema gives an input schema of a struct with Tuning the tuning's
// constraints (see tuneSchema).
func (Tuning) extendSchema(s *jsonschema.Schema) { tuneSchema(s) }

// tuneSchema gives the tuning properties of a generated input schema their
// constraints, which struct tags cannot express: a clients' model then
// sees the range and the values. The temperature is a plain number (the
// generator makes a pointer nullable; null is refused like any other
// non-number).
func tuneSchema(s *jsonschema.Schema) *jsonschema.Schema {
	t := s.Properties["temperature"]
	t.Types, t.Type = nil, "number"
	t.Minimum, t.Maximum = ptr(backend.MinTemperature), ptr(backend.MaxTemperature)
	m := s.Properties["thinking_mode"]
	for _, v := range backend.ThinkingModes {
		m.Enum = append(m.Enum, v)
	}
	return s
}

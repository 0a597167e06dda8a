package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
)

// Tuning is the optional per-call tuning chat and chat-reply take (the expert
// tools' temperature and thinking_mode). Its tags are part of both tools'
// input schemas; tuneSchema adds the range and the values they accept.
type Tuning struct {
	Temperature  *float64 `json:"temperature,omitempty" jsonschema:"Optional: the sampling temperature, from 0 to 2: lower is more focused and repeatable, higher more varied. Omit it for the model's default. Applied by the Gemini API backend; the Gemini CLI backends cannot set it per call, answer without it and say so in the result's _meta.notApplied."`
	ThinkingMode string   `json:"thinking_mode,omitempty" jsonschema:"Optional: how much Gemini may think before it answers: minimal, low, medium, high or max. On the Gemini API backend it becomes a thinking budget of 128, 2048, 8192, 16384 or 32768 tokens (Gemini 2.5 models, kept within the model's range) or a thinking level (Gemini 3 models, max being HIGH); any adjustment is reported in _meta.notApplied. The Gemini CLI backends cannot set it per call, answer without it and say so in _meta.notApplied."`
}

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

// checkTuning refuses a temperature or thinking_mode outside what the
// tools take, from a call's raw arguments, with a message that says what
// to send instead.
func checkTuning(raw json.RawMessage) error {
	var args struct {
		Temperature  json.RawMessage `json:"temperature"`
		ThinkingMode json.RawMessage `json:"thinking_mode"`
	}
	if !mayTune(raw) || json.Unmarshal(raw, &args) != nil {
		return nil // none, or not an object: the SDK's own validation says so
	}
	if args.Temperature != nil {
		var t float64
		if err := json.Unmarshal(args.Temperature, &t); err != nil || string(args.Temperature) == "null" ||
			math.IsNaN(t) || t < backend.MinTemperature || t > backend.MaxTemperature {
			return fmt.Errorf("temperature must be a number from %g to %g, not %s; omit it for the model's default",
				backend.MinTemperature, backend.MaxTemperature, args.Temperature)
		}
	}
	if args.ThinkingMode != nil {
		var m string
		if err := json.Unmarshal(args.ThinkingMode, &m); err != nil || !slices.Contains(backend.ThinkingModes, m) {
			return fmt.Errorf("thinking_mode must be one of %s, not %s; omit it for the model's default",
				strings.Join(backend.ThinkingModes, ", "), args.ThinkingMode)
		}
	}
	return nil
}

// tuningKeys are the arguments checkTuning reads, in lower case.
var tuningKeys = []string{"temperature", "thinking_mode"}

// mayTune says whether raw may hold a tuning argument, without decoding
// it: most calls have none, and the decoding would cost each of them
// about as much as the rest of this server's own checks. encoding/json
// matches a key to a field without regard to case, and after unescaping
// it; so only text that is ASCII, has no escape and holds neither name in
// any case certainly has no tuning argument.
func mayTune(raw []byte) bool {
	for _, b := range raw {
		if b >= utf8.RuneSelf || b == '\\' {
			return true
		}
	}
	for i, b := range raw {
		for _, k := range tuningKeys {
			if b|0x20 == k[0] && len(raw)-i >= len(k) && asciiFoldEqual(raw[i:i+len(k)], k) {
				return true
			}
		}
	}
	return false
}

// asciiFoldEqual says whether the ASCII bytes b spell lower, whose
// letters are lower case, in any case.
func asciiFoldEqual(b []byte, lower string) bool {
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// tuningMiddleware checks the tuning of the calls of the tool named tool
// (one that takes Tuning) before the SDK validates the arguments against
// the schema: the SDK's own message for a value out of range ("maximum:
// 3/1 is greater than 2.000000") would leave the caller guessing. A
// refused call never reaches the tool, so nothing runs.
func tuningMiddleware(tool string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/call" {
				if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p.Name == tool {
					if err := checkTuning(p.Arguments); err != nil {
						return conversation.Failure(err), nil
					}
				}
			}
			return next(ctx, method, req)
		}
	}
}

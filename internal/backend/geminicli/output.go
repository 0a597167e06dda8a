package geminicli

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// Output is the object `gemini --output-format json` prints: on stdout when
// the call succeeds, on stderr (after free-text noise) when it fails.
type Output struct {
	SessionID string          `json:"session_id,omitempty"`
	Response  *string         `json:"response,omitempty"`
	Stats     json.RawMessage `json:"stats,omitempty"`
	Error     *OutputError    `json:"error,omitempty"`
	Warnings  []string        `json:"warnings,omitempty"`
}

// OutputError is the CLI's description of a failure.
type OutputError struct {
	Type    string          `json:"type"`
	Message string          `json:"message"`
	Code    json.RawMessage `json:"code,omitempty"`
}

// errNoJSON says that no JSON object of the CLI's output shape was found.
var errNoJSON = errors.New("no JSON object found")

// ParseOutput reads the CLI's JSON output. The object is normally the whole
// of stdout, but the CLI (and things it loads) may print other lines first,
// and on failure it prints the object to stderr after a stack trace,
// sometimes twice, so the last object that looks like CLI output wins.
func ParseOutput(b []byte) (Output, error) {
	var out Output
	trimmed := bytes.TrimSpace(b)
	if len(trimmed) == 0 {
		return out, errNoJSON
	}
	if trimmed[0] == '{' && json.Unmarshal(trimmed, &out) == nil && out.looksValid() {
		return out, nil
	}
	// Candidates start with '{' at the beginning of a line; try them from
	// the last one back, decoding only the first value at each.
	for end := len(b); end > 0; {
		i := bytes.LastIndexByte(b[:end], '{')
		if i < 0 {
			break
		}
		end = i
		if i > 0 && b[i-1] != '\n' && b[i-1] != '\r' {
			continue
		}
		var cand Output
		dec := json.NewDecoder(bytes.NewReader(b[i:]))
		if dec.Decode(&cand) == nil && cand.looksValid() {
			return cand, nil
		}
	}
	return Output{}, errNoJSON
}

// looksValid tells the CLI's output object apart from any other JSON that
// may appear in its streams (an API error body, a log record).
func (o *Output) looksValid() bool {
	return o.Response != nil || o.SessionID != "" || (o.Error != nil && (o.Error.Message != "" || o.Error.Type != ""))
}

// CodeInt returns the error's numeric code, if it has one. The CLI uses
// numbers for exit codes and HTTP statuses, but the field is not typed
// upstream, so strings holding numbers are accepted too.
func (e *OutputError) CodeInt() (int, bool) {
	if e == nil || len(e.Code) == 0 {
		return 0, false
	}
	var n json.Number
	if json.Unmarshal(e.Code, &n) != nil {
		var s string
		if json.Unmarshal(e.Code, &s) != nil {
			return 0, false
		}
		n = json.Number(s)
	}
	i, err := n.Int64()
	if err != nil || i < 0 || i > 1<<20 {
		return 0, false
	}
	return int(i), true
}

// apiErrorBody is the Google API error envelope. The CLI passes it through as
// the text of its own error message for API failures.
type apiErrorBody struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
	} `json:"error"`
}

// splitAPIMessage unwraps an error message that is itself a Google API error
// body, returning its message and status (such as RESOURCE_EXHAUSTED).
func splitAPIMessage(msg string) (text, status string, code int) {
	m := strings.TrimSpace(msg)
	if !strings.HasPrefix(m, "{") {
		// Some errors wrap the body: `[API Error: {...}]`, `got status: 429. {...}`.
		if i := strings.Index(m, `{"error"`); i >= 0 {
			m = m[i:]
		} else {
			return msg, "", 0
		}
	}
	var body apiErrorBody
	if err := json.NewDecoder(strings.NewReader(m)).Decode(&body); err != nil || body.Error.Message == "" {
		return msg, "", 0
	}
	return body.Error.Message, body.Error.Status, body.Error.Code
}

// Usage sums the token counts of every model the call used, from the
// stats the CLI prints with its answer (stats.models.NAME.tokens, where
// cached are the prompt tokens the API's implicit caching served); nil
// when there are none.
func (o *Output) Usage() *backend.Usage {
	var stats struct {
		Models map[string]struct {
			Tokens struct {
				Prompt     int `json:"prompt"`
				Candidates int `json:"candidates"`
				Thoughts   int `json:"thoughts"`
				Cached     int `json:"cached"`
			} `json:"tokens"`
		} `json:"models"`
	}
	if len(o.Stats) == 0 || json.Unmarshal(o.Stats, &stats) != nil || len(stats.Models) == 0 {
		return nil
	}
	var u backend.Usage
	for _, m := range stats.Models {
		u.PromptTokens += m.Tokens.Prompt
		u.OutputTokens += m.Tokens.Candidates
		u.ThinkingTokens += m.Tokens.Thoughts
		u.CachedTokens += m.Tokens.Cached
	}
	if u == (backend.Usage{}) {
		return nil
	}
	return &u
}

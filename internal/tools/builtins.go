package tools

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/validate"
)

// MaxSchemaBytes bounds chat's response_schema, as JSON.
const MaxSchemaBytes = 32 << 10

// Grounding is chat's and chat-reply's google_search and urls: the Gemini
// API's own tools, which the Gemini API backend alone has. Its tags are
// part of both tools' input schemas.
type Grounding struct {
	GoogleSearch bool     `json:"google_search,omitempty" jsonschema:"Optional: ground the answer in a Google Search that Gemini runs itself (Gemini API backend only). The sources follow the answer as a numbered list and as resource_link items; _meta.grounding holds the search queries, the sources and the search suggestions (renderedContent) that Google's terms require to be shown to the end user."`
	URLs         []string `json:"urls,omitempty" jsonschema:"Optional: up to 20 public http(s) URLs that Gemini reads itself to answer (the Gemini API's URL context; Gemini API backend only). This server never fetches them; URLs of this machine or a private network are refused. Each URL's retrieval status is in _meta.urls."`
}

// apply checks the grounding and copies it into a turn.
func (g Grounding) apply(turn *backend.Turn) error {
	if len(g.URLs) > backend.MaxURLs {
		return fmt.Errorf("urls has %d URLs, over the Gemini API's limit of %d per request", len(g.URLs), backend.MaxURLs)
	}
	// Each URL goes on in the form it was judged in (its host as a URL
	// parser maps it, see validate.PublicURL).
	urls := make([]string, 0, len(g.URLs))
	for i, u := range g.URLs {
		norm, err := validate.PublicURL(u)
		if err != nil {
			return fmt.Errorf("urls[%d]: %w", i, err)
		}
		if slices.Contains(urls, norm) {
			return fmt.Errorf("urls[%d]: URL %q is given twice", i, msg.Clip(u, 200))
		}
		urls = append(urls, norm)
	}
	turn.GoogleSearch = g.GoogleSearch
	if len(urls) > 0 {
		turn.URLs = urls
	}
	return nil
}

// responseSchema checks chat's response_schema: valid JSON Schema (draft
// 2020-12 or draft-07) of a JSON object, within MaxSchemaBytes, with no
// reference outside itself. It returns the schema as JSON, for the API,
// and resolved, to validate the answer with.
func responseSchema(s map[string]any) (json.RawMessage, *jsonschema.Resolved, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, nil, fmt.Errorf("response_schema cannot be read: %v", err)
	}
	if len(raw) > MaxSchemaBytes {
		return nil, nil, fmt.Errorf("response_schema is %d bytes of JSON, over this server's limit of %d", len(raw), MaxSchemaBytes)
	}
	var sc jsonschema.Schema
	if err := json.Unmarshal(raw, &sc); err != nil {
		return nil, nil, fmt.Errorf("response_schema is not a valid JSON Schema: %v", err)
	}
	if sc.Type != "object" {
		return nil, nil, errors.New(`response_schema must describe a JSON object ("type": "object"), which the answer's structuredContent is; ` +
			"put a list or a value in a property of an object")
	}
	rs, err := sc.Resolve(nil)
	if err != nil {
		return nil, nil, fmt.Errorf("response_schema is not a valid JSON Schema: %v", err)
	}
	return raw, rs, nil
}

// structuredAnswer parses an answer to a turn with a response schema and
// validates it against rs.
func structuredAnswer(text string, rs *jsonschema.Resolved) (map[string]any, error) {
	var v any
	dec := json.NewDecoder(strings.NewReader(text))
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("it is not JSON (%v)", err)
	}
	if dec.More() {
		return nil, errors.New("it holds more than one JSON value")
	}
	if err := rs.Validate(v); err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("it is not a JSON object")
	}
	return m, nil
}

// checkStructured checks the answer to a turn with the response schema
// raw (checked by responseSchema before the turn) and returns it parsed;
// its error keeps the answer's text, and says where the turn was kept.
func checkStructured(res *backend.Answer, raw json.RawMessage) (map[string]any, error) {
	var sc map[string]any
	if err := json.Unmarshal(raw, &sc); err != nil {
		return nil, err
	}
	_, rs, err := responseSchema(sc)
	if err != nil {
		return nil, err
	}
	v, err := structuredAnswer(res.Text, rs)
	if err == nil {
		return v, nil
	}
	kept := "."
	if res.SessionID != "" {
		kept = fmt.Sprintf("; the turn is kept in session %s, so chat-reply can ask Gemini to correct it.", res.SessionID)
	}
	text := res.Text
	if len(text) > maxKeptAnswer {
		text = msg.Clip(text, maxKeptAnswer) + fmt.Sprintf("\n[gemini-mcp-server: the answer is %d bytes; the first %d are shown]", len(res.Text), maxKeptAnswer)
	}
	return nil, fmt.Errorf("the answer does not satisfy response_schema: %v%s\nThe answer:\n%s", err, kept, text)
}

// maxKeptAnswer bounds the answer an error for an answer that does not
// satisfy the response schema shows.
const maxKeptAnswer = 64 << 10

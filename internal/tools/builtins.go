package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/respschema"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/validate"
)

// MaxSchemaBytes bounds chat's response_schema, as JSON.
const MaxSchemaBytes = 32 << 10

// Grounding is chat's and chat-reply's google_search and urls: the Gemini
// API's own tools, which the Gemini API backend alone has. Its tags are
// part of both tools' input schemas.
type Grounding struct {
	GoogleSearch  bool     `json:"google_search,omitempty" jsonschema:"Optional: ground the answer in a Google Search that Gemini runs itself (Gemini API backend only). The sources follow the answer as a numbered list and as resource_link items; _meta.grounding holds the search queries, the sources and the search suggestions (renderedContent) that Google's terms require to be shown to the end user."`
	URLs          []string `json:"urls,omitempty" jsonschema:"Optional: up to 20 public http(s) URLs that Gemini reads itself to answer (the Gemini API's URL context; Gemini API backend only). This server never fetches them; URLs of this machine or a private network are refused. Each URL's retrieval status is in _meta.urls."`
	CodeExecution bool     `json:"code_execution,omitempty" jsonschema:"Optional: let Gemini write and run Python in Google's sandbox (Gemini API backend only; the Gemini CLI backends refuse it). The code, its outcome and output appear in the answer where Gemini ran them and in _meta.codeExecution; images it made follow as image items."`
}

// urls checks the grounding's URLs and returns them as the turn takes
// them (nil for none).
func (g Grounding) urls() ([]string, error) {
	if len(g.URLs) > backend.MaxURLs {
		return nil, fmt.Errorf("urls has %d URLs, over the Gemini API's limit of %d per request", len(g.URLs), backend.MaxURLs)
	}
	// Each URL goes on in the form it was judged in (its host as a URL
	// parser maps it, see validate.PublicURL).
	urls := make([]string, 0, len(g.URLs))
	for i, u := range g.URLs {
		norm, err := validate.PublicURL(u)
		if err != nil {
			return nil, fmt.Errorf("urls[%d]: %w", i, err)
		}
		if slices.Contains(urls, norm) {
			return nil, fmt.Errorf("urls[%d]: URL %q is given twice", i, msg.Clip(u, 200))
		}
		urls = append(urls, norm)
	}
	if len(urls) == 0 {
		return nil, nil
	}
	return urls, nil
}

// responseSchema checks chat's response_schema (see internal/respschema):
// valid JSON Schema (draft 2020-12, or draft-07 when its $schema says so)
// of a JSON object, within MaxSchemaBytes and the limits that keep its
// checking short, with no reference outside itself. It returns the schema
// as JSON, for the API, and compiled, to validate the answer with.
func responseSchema(s map[string]any) (json.RawMessage, *respschema.Schema, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, nil, fmt.Errorf("response_schema cannot be read: %w", err)
	}
	sc, err := compileSchema(raw)
	if err != nil {
		return nil, nil, err
	}
	return raw, sc, nil
}

// compileSchema is responseSchema's check of the schema as JSON.
func compileSchema(raw json.RawMessage) (*respschema.Schema, error) {
	if len(raw) > MaxSchemaBytes {
		return nil, fmt.Errorf("response_schema is %d bytes of JSON, over this server's limit of %d", len(raw), MaxSchemaBytes)
	}
	sc, err := respschema.Compile(raw)
	if err != nil {
		var se *respschema.Error
		if errors.As(err, &se) {
			switch se.Kind {
			case respschema.Unsupported:
				return nil, fmt.Errorf("response_schema asks for what the Gemini API or this server does not take: %w", err)
			case respschema.TooComplex:
				return nil, fmt.Errorf("response_schema is too complex for this server: %w; simplify it", err)
			}
		}
		return nil, fmt.Errorf("response_schema is not a valid JSON Schema: %w", err)
	}
	if sc.Type() != "object" {
		return nil, errors.New(`response_schema must describe a JSON object ("type": "object"), which the answer's structuredContent is; ` +
			"put a list or a value in a property of an object")
	}
	return sc, nil
}

// answerCheckTimeout bounds the time an answer's check against its
// response schema takes, beside respschema.MaxSteps.
const answerCheckTimeout = 10 * time.Second

// structuredAnswer parses an answer to a turn with a response schema and
// validates it against sc, within ctx.
func structuredAnswer(ctx context.Context, text string, sc *respschema.Schema) (map[string]any, error) {
	var v any
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber() // numbers checked exactly, and returned as written
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("it is not JSON (%w)", err)
	}
	if dec.More() {
		return nil, errors.New("it holds more than one JSON value")
	}
	if err := sc.Validate(ctx, v); err != nil {
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
// The check stops when ctx ends (the call cancelled), past
// answerCheckTimeout, or past respschema.MaxSteps.
func checkStructured(ctx context.Context, res *backend.Answer, raw json.RawMessage) (map[string]any, error) {
	sc, err := compileSchema(raw)
	if err != nil {
		return nil, err
	}
	vctx, cancel := context.WithTimeout(ctx, answerCheckTimeout)
	defer cancel()
	v, err := structuredAnswer(vctx, res.Text, sc)
	if err == nil {
		return v, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err() // the call was cancelled: no one reads the rest
	}
	what := "the answer does not satisfy response_schema: " + err.Error()
	if errors.Is(err, respschema.ErrTooLong) || errors.Is(err, context.DeadlineExceeded) {
		what = fmt.Sprintf("the answer could not be checked against response_schema within this server's limits (%d steps, %s), so it is not returned as structuredContent", respschema.MaxSteps, answerCheckTimeout)
	}
	kept := "."
	if res.SessionID != "" {
		kept = fmt.Sprintf("; the turn is kept in session %s, so chat-reply can ask Gemini to correct it.", res.SessionID)
	}
	text := res.Text
	if len(text) > maxKeptAnswer {
		text = msg.Clip(text, maxKeptAnswer) + fmt.Sprintf("\n[gemini-mcp-server: the answer is %d bytes; the first %d are shown]", len(res.Text), maxKeptAnswer)
	}
	return nil, fmt.Errorf("%s%s\nThe answer:\n%s", what, kept, text)
}

// maxKeptAnswer bounds the answer an error for an answer that does not
// satisfy the response schema shows.
const maxKeptAnswer = 64 << 10

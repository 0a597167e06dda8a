package fakeapi

// The Gemini API's built-in tools and structured output, as the Server
// fakes them:
//
//   - a request whose tools hold googleSearch is answered with the usual
//     text, and its last event's candidate carries groundingMetadata:
//     webSearchQueries (the prompt's first 60 runes), groundingChunks of
//     [SearchSources] web sources (or N with [[sources:N]] in the prompt),
//     one groundingSupport citing them all for the whole text, and a
//     searchEntryPoint whose renderedContent is [RenderedSuggestions]. A
//     model named with [Server.DenySearch] is refused with 400
//     INVALID_ARGUMENT and [SearchUnsupportedMessage], as the API refuses
//     a model that cannot search;
//   - a request whose tools hold urlContext is answered with the usual
//     text, and its last event's candidate carries urlContextMetadata: one
//     urlMetadata per http(s) URL in the last user text, in order, whose
//     urlRetrievalStatus is URL_RETRIEVAL_STATUS_SUCCESS, or
//     URL_RETRIEVAL_STATUS_ERROR for a URL that holds "url-error";
//   - a request whose generationConfig has responseMimeType
//     application/json is answered with JSON: the object of a
//     [[json:{…}]] directive in the prompt, as written (it need not
//     satisfy the schema), else a small instance of its
//     responseJsonSchema (required properties only; strings "fake",
//     numbers 0, booleans false, arrays empty, an enum's first value).

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

var (
	sourcesRE = regexp.MustCompile(`\[\[sources:(\d+)\]\]`)
	jsonRE    = regexp.MustCompile(`(?s)\[\[json:(\{.*?\})\]\]`)
	urlRE     = regexp.MustCompile(`https?://[^\s<>"]+`)
)

// SearchSources is the number of web sources a grounded answer cites
// when the prompt does not say [[sources:N]].
const SearchSources = 2

// RenderedSuggestions is the searchEntryPoint.renderedContent of every
// grounded answer.
const RenderedSuggestions = `<div class="fake-search-suggestions"><a href="https://www.google.com/search?q=fake">fake</a></div>`

// SearchUnsupportedMessage is the message of the 400 the Server answers a
// googleSearch request for a model named with DenySearch.
const SearchUnsupportedMessage = "Search Grounding is not supported."

// SearchSource is the i-th (from 1) web source of a grounded answer.
func SearchSource(i int) (title, uri string) {
	return fmt.Sprintf("Fake source %d", i), fmt.Sprintf("https://example.com/fake-search/%d", i)
}

// DenySearch makes the Server refuse googleSearch for the models named,
// as the API refuses a model without Grounding with Google Search.
func (s *Server) DenySearch(models ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.noSearch == nil {
		s.noSearch = map[string]bool{}
	}
	for _, m := range models {
		s.noSearch[m] = true
	}
}

// builtins is what of a request's body asks for built-in tools and
// structured output.
type builtins struct {
	Tools []struct {
		GoogleSearch *json.RawMessage `json:"googleSearch"`
		URLContext   *json.RawMessage `json:"urlContext"`
	} `json:"tools"`
	GenerationConfig struct {
		ResponseMIMEType   string          `json:"responseMimeType"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
	} `json:"generationConfig"`
}

func builtinsOf(body []byte) builtins {
	var b builtins
	_ = json.Unmarshal(body, &b)
	return b
}

// GoogleSearch says whether the request offered the googleSearch tool.
func (r Request) GoogleSearch() bool {
	for _, t := range builtinsOf(r.Body).Tools {
		if t.GoogleSearch != nil {
			return true
		}
	}
	return false
}

// URLContext says whether the request offered the urlContext tool.
func (r Request) URLContext() bool {
	for _, t := range builtinsOf(r.Body).Tools {
		if t.URLContext != nil {
			return true
		}
	}
	return false
}

// ResponseSchema is the request's generationConfig.responseJsonSchema,
// nil when it has none, and its responseMimeType.
func (r Request) ResponseSchema() (schema json.RawMessage, mimeType string) {
	gc := builtinsOf(r.Body).GenerationConfig
	return gc.ResponseJSONSchema, gc.ResponseMIMEType
}

// refuseBuiltins answers, and says so, a request for a built-in tool the
// model may not use.
func (s *Server) refuseBuiltins(w http.ResponseWriter, rec Request) bool {
	s.mu.Lock()
	denied := s.noSearch[rec.Model]
	s.mu.Unlock()
	if denied && rec.GoogleSearch() {
		s.fail(w, rec, http.StatusBadRequest, SearchUnsupportedMessage)
		return true
	}
	return false
}

// structured is the answer to a request for JSON: the [[json:…]]
// directive's object, or an instance of the schema; answer otherwise.
func structured(answer string, rec Request) string {
	schema, mime := rec.ResponseSchema()
	if mime != "application/json" {
		return answer
	}
	if m := jsonRE.FindStringSubmatch(rec.LastUserText); m != nil {
		return m[1]
	}
	var sc any
	if json.Unmarshal(schema, &sc) != nil {
		sc = nil
	}
	b, _ := json.Marshal(instance(sc, 0))
	return string(b)
}

// instance is a small value of schema sc.
func instance(sc any, depth int) any {
	m, _ := sc.(map[string]any)
	if m == nil || depth > 8 {
		return map[string]any{}
	}
	if e, ok := m["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	if c, ok := m["const"]; ok {
		return c
	}
	typ := m["type"]
	if l, ok := typ.([]any); ok && len(l) > 0 {
		typ = l[0]
	}
	switch typ {
	case "string":
		return "fake"
	case "number", "integer":
		return 0
	case "boolean":
		return false
	case "array":
		return []any{}
	case "null":
		return nil
	}
	out := map[string]any{}
	props, _ := m["properties"].(map[string]any)
	req, _ := m["required"].([]any)
	for _, r := range req {
		if name, ok := r.(string); ok {
			out[name] = instance(props[name], depth+1)
		}
	}
	return out
}

// withMetadata adds to the last event of an answer (frame) the grounding
// and URL context metadata the request's built-in tools give.
func withMetadata(frame []byte, rec Request, answer string) []byte {
	search, urls := rec.GoogleSearch(), rec.URLContext()
	if !search && !urls {
		return frame
	}
	var m map[string]any
	if json.Unmarshal(frame, &m) != nil {
		return frame
	}
	cands, _ := m["candidates"].([]any)
	if len(cands) == 0 {
		return frame
	}
	c, _ := cands[0].(map[string]any)
	if search {
		n := SearchSources
		if sm := sourcesRE.FindStringSubmatch(rec.LastUserText); sm != nil {
			n, _ = strconv.Atoi(sm[1])
		}
		chunks := make([]any, n)
		indices := make([]int, n)
		for i := range n {
			title, uri := SearchSource(i + 1)
			chunks[i] = map[string]any{"web": map[string]any{"uri": uri, "title": title}}
			indices[i] = i
		}
		gm := map[string]any{
			"webSearchQueries": []string{firstRunes(strings.TrimSpace(rec.Prompt), 60)},
			"searchEntryPoint": map[string]any{"renderedContent": RenderedSuggestions},
		}
		if n > 0 {
			gm["groundingChunks"] = chunks
			gm["groundingSupports"] = []any{map[string]any{
				"segment":               map[string]any{"startIndex": 0, "endIndex": len(answer), "text": answer},
				"groundingChunkIndices": indices,
			}}
		}
		c["groundingMetadata"] = gm
	}
	if urls {
		var meta []any
		for _, u := range urlRE.FindAllString(rec.LastUserText, -1) {
			status := "URL_RETRIEVAL_STATUS_SUCCESS"
			if strings.Contains(u, "url-error") {
				status = "URL_RETRIEVAL_STATUS_ERROR"
			}
			meta = append(meta, map[string]any{"retrievedUrl": u, "urlRetrievalStatus": status})
		}
		c["urlContextMetadata"] = map[string]any{"urlMetadata": meta}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return frame
	}
	return b
}

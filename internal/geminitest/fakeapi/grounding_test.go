package fakeapi

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/genai"
)

// frames decodes each event of a streamed answer as the genai SDK's
// GenerateContentResponse, which is the API's wire format.
func frames(t *testing.T, body []byte) []*genai.GenerateContentResponse {
	t.Helper()
	var out []*genai.GenerateContentResponse
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		r := new(genai.GenerateContentResponse)
		dec := json.NewDecoder(strings.NewReader(line))
		if err := dec.Decode(r); err != nil {
			t.Fatalf("event %s: %v", line, err)
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		t.Fatalf("no events in %s", body)
	}
	return out
}

func builtinBody(t *testing.T, prompt string, tools []any, gc map[string]any) string {
	t.Helper()
	m := map[string]any{
		"contents": []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": prompt}}}},
		"tools":    tools,
	}
	if gc != nil {
		m["generationConfig"] = gc
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestGoogleSearchGrounding(t *testing.T) {
	s := New()
	t.Cleanup(s.Close)
	resp, body := post(t, s, "gemini-2.5-flash", MethodStream,
		builtinBody(t, "who won [[sources:3]] [[chunks:2]]", []any{map[string]any{"googleSearch": map[string]any{}}}, nil))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	evs := frames(t, body)
	if evs[0].Candidates[0].GroundingMetadata != nil {
		t.Errorf("the first of two events carries grounding metadata")
	}
	last := evs[len(evs)-1]
	text := ""
	for _, e := range evs {
		text += e.Text()
	}
	gm := last.Candidates[0].GroundingMetadata
	if gm == nil {
		t.Fatalf("no groundingMetadata in %s", body)
	}
	if len(gm.WebSearchQueries) != 1 || !strings.HasPrefix(gm.WebSearchQueries[0], "who won") {
		t.Errorf("webSearchQueries = %q", gm.WebSearchQueries)
	}
	if len(gm.GroundingChunks) != 3 {
		t.Fatalf("%d groundingChunks, want 3", len(gm.GroundingChunks))
	}
	for i, c := range gm.GroundingChunks {
		title, uri := SearchSource(i + 1)
		if c.Web == nil || c.Web.URI != uri || c.Web.Title != title {
			t.Errorf("groundingChunks[%d] = %+v, want %s %s", i, c.Web, title, uri)
		}
	}
	if len(gm.GroundingSupports) != 1 || gm.GroundingSupports[0].Segment == nil ||
		int(gm.GroundingSupports[0].Segment.EndIndex) != len(text) || len(gm.GroundingSupports[0].GroundingChunkIndices) != 3 {
		t.Errorf("groundingSupports = %+v, want one over the %d bytes of text citing 3 chunks", gm.GroundingSupports, len(text))
	}
	if gm.SearchEntryPoint == nil || gm.SearchEntryPoint.RenderedContent != RenderedSuggestions {
		t.Errorf("searchEntryPoint = %+v", gm.SearchEntryPoint)
	}
	r := s.Requests()[0]
	if !r.GoogleSearch() || r.URLContext() {
		t.Errorf("recorded GoogleSearch %v URLContext %v, want true false", r.GoogleSearch(), r.URLContext())
	}
}

func TestGoogleSearchDenied(t *testing.T) {
	s := New()
	t.Cleanup(s.Close)
	s.DenySearch("gemini-2.0-flash")
	resp, body := post(t, s, "gemini-2.0-flash", MethodStream,
		builtinBody(t, "who won", []any{map[string]any{"googleSearch": map[string]any{}}}, nil))
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), SearchUnsupportedMessage) ||
		!strings.Contains(string(body), "INVALID_ARGUMENT") {
		t.Errorf("status %d: %s", resp.StatusCode, body)
	}
	// Without the tool, the same model answers.
	if resp, body := post(t, s, "gemini-2.0-flash", MethodStream, builtinBody(t, "who won", []any{}, nil)); resp.StatusCode != 200 {
		t.Errorf("without googleSearch: status %d: %s", resp.StatusCode, body)
	}
}

func TestURLContextMetadata(t *testing.T) {
	s := New()
	t.Cleanup(s.Close)
	prompt := "compare\n\nURLs:\nhttps://example.com/a\nhttps://example.org/url-error"
	_, body := post(t, s, "gemini-2.5-flash", MethodStream, builtinBody(t, prompt, []any{map[string]any{"urlContext": map[string]any{}}}, nil))
	evs := frames(t, body)
	um := evs[len(evs)-1].Candidates[0].URLContextMetadata
	if um == nil || len(um.URLMetadata) != 2 {
		t.Fatalf("urlContextMetadata = %+v in %s", um, body)
	}
	want := []genai.URLMetadata{
		{RetrievedURL: "https://example.com/a", URLRetrievalStatus: genai.URLRetrievalStatusSuccess},
		{RetrievedURL: "https://example.org/url-error", URLRetrievalStatus: genai.URLRetrievalStatusError},
	}
	for i, w := range want {
		if *um.URLMetadata[i] != w {
			t.Errorf("urlMetadata[%d] = %+v, want %+v", i, *um.URLMetadata[i], w)
		}
	}
	if evs[len(evs)-1].Candidates[0].GroundingMetadata != nil {
		t.Errorf("groundingMetadata without googleSearch")
	}
}

func TestStructuredAnswer(t *testing.T) {
	s := New()
	t.Cleanup(s.Close)
	schema := map[string]any{
		"type":     "object",
		"required": []string{"name", "count", "tags", "kind"},
		"properties": map[string]any{
			"name":  map[string]any{"type": "string"},
			"count": map[string]any{"type": "integer"},
			"tags":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
			"kind":  map[string]any{"type": "string", "enum": []string{"a", "b"}},
			"extra": map[string]any{"type": "string"},
		},
	}
	gc := map[string]any{"responseMimeType": "application/json", "responseJsonSchema": schema}
	_, body := post(t, s, "gemini-2.5-flash", MethodStream, builtinBody(t, "list it", []any{}, gc))
	evs := frames(t, body)
	if got, want := evs[0].Text(), `{"count":0,"kind":"a","name":"fake","tags":[]}`; got != want {
		t.Errorf("answer %s, want %s", got, want)
	}
	_, body = post(t, s, "gemini-2.5-flash", MethodStream, builtinBody(t, `list it [[json:{"name":7}]]`, []any{}, gc))
	if got := frames(t, body)[0].Text(); got != `{"name":7}` {
		t.Errorf("answer %s, want the directive's", got)
	}
	sc, mime := s.Requests()[0].ResponseSchema()
	if mime != "application/json" || !strings.Contains(string(sc), `"enum"`) {
		t.Errorf("recorded schema %s %q", sc, mime)
	}
}

package api

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

func TestGoogleSearchGrounding(t *testing.T) {
	t.Parallel()
	h := newTestHost(t, true)
	f := newFixture(t, Options{Tools: h})
	a := f.mustRun(backend.Turn{Prompt: "latest go release [[sources:3]]", Builtins: backend.Builtins{GoogleSearch: true}})
	reqs := f.streams()
	if len(reqs) != 1 || !reqs[0].GoogleSearch() || reqs[0].URLContext() {
		t.Fatalf("requests %d, googleSearch %v", len(reqs), len(reqs) > 0 && reqs[0].GoogleSearch())
	}
	if len(reqs[0].Tools) != 0 {
		t.Errorf("the MCP host's tools %q were declared beside googleSearch", reqs[0].Tools)
	}
	if !slices.ContainsFunc(a.NotApplied, func(s string) bool { return strings.HasPrefix(s, "tools: the MCP servers' tools were not offered") }) {
		t.Errorf("notApplied %q does not say the host's tools were left out", a.NotApplied)
	}
	g := a.Grounding
	if g == nil || len(g.Sources) != 3 || g.RenderedContent != fakeapi.RenderedSuggestions || len(g.Queries) != 1 {
		t.Fatalf("grounding %+v", g)
	}
	for i, s := range g.Sources {
		title, uri := fakeapi.SearchSource(i + 1)
		if s.Title != title || s.URI != uri {
			t.Errorf("source %d = %+v, want %s %s", i+1, s, title, uri)
		}
	}
	// Without google_search, the host's tools are offered and no
	// grounding comes back.
	a = f.mustRun(backend.Turn{Prompt: "plain"})
	if a.Grounding != nil || len(f.streams()[1].Tools) == 0 {
		t.Errorf("plain turn: grounding %+v, tools %q", a.Grounding, f.streams()[1].Tools)
	}
}

func TestGoogleSearchRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.fake.DenySearch("gemini-2.0-flash")
	_, err := f.run(backend.Turn{Prompt: "who won", Model: "gemini-2.0-flash", Builtins: backend.Builtins{GoogleSearch: true}})
	wantKind(t, err, backend.KindAPI, 400, fakeapi.SearchUnsupportedMessage, "google_search (Grounding with Google Search)",
		`model "gemini-2.0-flash" may not support`)
	if n := len(f.streams()); n != 1 {
		t.Errorf("%d requests, want 1 (a 400 is not retried)", n)
	}
}

func TestURLContext(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	urls := []string{"https://example.com/a", "https://example.org/url-error"}
	a := f.mustRun(backend.Turn{Prompt: "compare", Builtins: backend.Builtins{URLs: urls}})
	r := f.streams()[0]
	if !r.URLContext() || r.GoogleSearch() {
		t.Errorf("urlContext %v googleSearch %v", r.URLContext(), r.GoogleSearch())
	}
	if want := "compare\n\nURLs:\n" + strings.Join(urls, "\n"); r.LastUserText != want {
		t.Errorf("prompt %q, want %q", r.LastUserText, want)
	}
	want := []backend.URLStatus{{URL: urls[0], Status: "URL_RETRIEVAL_STATUS_SUCCESS"}, {URL: urls[1], Status: "URL_RETRIEVAL_STATUS_ERROR"}}
	if !slices.Equal(a.URLs, want) {
		t.Errorf("urls %+v, want %+v", a.URLs, want)
	}
}

func TestResponseSchemaSent(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Tools: newTestHost(t, true)})
	schema := json.RawMessage(`{"type":"object","required":["n"],"properties":{"n":{"type":"integer"}}}`)
	a := f.mustRun(backend.Turn{Prompt: "count", Builtins: backend.Builtins{ResponseSchema: schema}})
	sc, mime := f.streams()[0].ResponseSchema()
	var got, want any
	_ = json.Unmarshal(sc, &got)
	_ = json.Unmarshal(schema, &want)
	if mime != "application/json" || !reflect.DeepEqual(got, want) {
		t.Errorf("sent responseJsonSchema %s, responseMimeType %q", sc, mime)
	}
	if tools := f.streams()[0].Tools; len(tools) != 0 {
		t.Errorf("the MCP host's tools %q were declared beside a response schema", tools)
	}
	if a.Text != `{"n":0}` {
		t.Errorf("answer %q", a.Text)
	}
}

func TestGroundingBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	a := f.mustRun(backend.Turn{Prompt: "many [[sources:200]]", Builtins: backend.Builtins{GoogleSearch: true}})
	if a.Grounding == nil || len(a.Grounding.Sources) != maxSources {
		t.Fatalf("kept %v sources of 200, want %d", a.Grounding, maxSources)
	}
	if _, uri := fakeapi.SearchSource(maxSources); a.Grounding.Sources[maxSources-1].URI != uri {
		t.Errorf("the last source kept is %+v, want the %dth", a.Grounding.Sources[maxSources-1], maxSources)
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// The tests here run the server with the API backend on the fake Gemini
// API for the API's built-in tools (google_search, urls) and structured
// answers (response_schema), and with a CLI backend, which refuses them.

// metaOf decodes the result's _meta entry key into v.
func metaOf(t *testing.T, res *mcp.CallToolResult, key string, v any) {
	t.Helper()
	b, err := json.Marshal(res.Meta[key])
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("_meta.%s = %s: %v", key, b, err)
	}
}

// checkSources checks the sources of a result grounded in n fake sources:
// the numbered list, a resource_link each, and _meta.grounding.
func checkSources(t *testing.T, res *mcp.CallToolResult, n int, query string) {
	t.Helper()
	var list string
	var links []*mcp.ResourceLink
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			if strings.HasPrefix(c.Text, "Sources:") {
				list = c.Text
			}
		case *mcp.ResourceLink:
			links = append(links, c)
		}
	}
	want := "Sources:"
	for i := 1; i <= n; i++ {
		title, uri := fakeapi.SearchSource(i)
		want += fmt.Sprintf("\n[%d] %s: %s", i, title, uri)
		if len(links) >= i && (links[i-1].URI != uri || links[i-1].Name != title) {
			t.Errorf("resource_link %d = %s %q, want %s %q", i, links[i-1].URI, links[i-1].Name, uri, title)
		}
	}
	if list != want {
		t.Errorf("sources text %q, want %q", list, want)
	}
	if len(links) != n {
		t.Errorf("%d resource_link items, want %d", len(links), n)
	}
	var g struct {
		Queries  []string `json:"webSearchQueries"`
		Sources  []struct{ Title, URI string }
		Rendered string `json:"renderedContent"`
	}
	metaOf(t, res, "grounding", &g)
	if len(g.Queries) != 1 || !strings.HasPrefix(g.Queries[0], query) || len(g.Sources) != n || g.Rendered != fakeapi.RenderedSuggestions {
		t.Errorf("_meta.grounding = %+v", g)
	}
}

func TestChatGoogleSearch(t *testing.T) {
	h := newHostEnv(t, map[string]any{})
	cs := h.stdio(t, nil, "")
	res, err := callTool(cs, "chat", map[string]any{"prompt": "latest Go release [[sources:3]]", "google_search": true})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %s", err, resultText(res))
	}
	if !strings.HasPrefix(resultText(res), "fake-api answer:") {
		t.Errorf("answer %q", resultText(res))
	}
	checkSources(t, res, 3, "latest Go release")
	reqs := h.api.Requests()
	if r := reqs[len(reqs)-1]; r.Method != fakeapi.MethodStream || !r.GoogleSearch() {
		t.Errorf("the last request %s did not offer googleSearch", r.Method)
	}

	// The continuation asks again with google_search; without it, the
	// answer has no sources.
	id, _ := res.Meta["sessionId"].(string)
	res, err = callTool(cs, "chat-reply", map[string]any{"prompt": "and before it?", "sessionId": id, "google_search": true})
	if err != nil || res.IsError {
		t.Fatalf("chat-reply: %v %s", err, resultText(res))
	}
	checkSources(t, res, fakeapi.SearchSources, "and before it?")
	res, err = callTool(cs, "chat-reply", map[string]any{"prompt": "thanks", "sessionId": id})
	if err != nil || res.IsError || res.Meta["grounding"] != nil {
		t.Fatalf("chat-reply without google_search: %v %+v", err, res)
	}
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); !ok || strings.HasPrefix(tc.Text, "Sources:") {
			t.Errorf("chat-reply without google_search has %#v", c)
		}
	}
}

func TestChatGoogleSearchUnavailable(t *testing.T) {
	h := newHostEnv(t, map[string]any{})
	h.api.DenySearch("gemini-2.0-flash")
	cs := h.stdio(t, nil, "")
	callErr(t, cs, "chat", map[string]any{"prompt": "who won", "model": "gemini-2.0-flash", "google_search": true},
		fakeapi.SearchUnsupportedMessage, "google_search (Grounding with Google Search)", `model "gemini-2.0-flash" may not support`)
	// The same model answers without it.
	if _, err := callTool(cs, "chat", map[string]any{"prompt": "who won", "model": "gemini-2.0-flash"}); err != nil {
		t.Fatal(err)
	}
}

func TestDebugGoogleSearch(t *testing.T) {
	e := newExpertEnv(t)
	cs := e.stdio(t)
	res, err := callExpert(t, cs, "debug", map[string]any{"error_description": "x509: certificate signed by unknown authority", "google_search": true})
	if err != nil || res.IsError {
		t.Fatalf("debug: %v %+v", err, res)
	}
	if !strings.Contains(resultText(res), "## Metadata") {
		t.Errorf("debug's text lost its sections: %q", resultText(res))
	}
	checkSources(t, res, fakeapi.SearchSources, "## Error description")
	s := e.streams()
	if !s[len(s)-1].GoogleSearch() {
		t.Error("debug's request did not offer googleSearch")
	}
	// What the search fed the model is billed, and counted.
	var u struct{ PromptTokens, OutputTokens, ThinkingTokens, ToolUsePromptTokens int }
	metaOf(t, res, "usage", &u)
	if want := u.PromptTokens + u.OutputTokens + u.ThinkingTokens + fakeapi.SearchToolUseTokens; u.ToolUsePromptTokens != fakeapi.SearchToolUseTokens ||
		res.Meta["tokensUsed"] != float64(want) || !strings.Contains(resultText(res), fmt.Sprintf("- tokens_used: %d\n", want)) {
		t.Errorf("usage %+v, tokensUsed %v, want %d", u, res.Meta["tokensUsed"], want)
	}
}

func TestChatURLs(t *testing.T) {
	h := newHostEnv(t, map[string]any{})
	cs := h.stdio(t, nil, "")
	urls := []any{"https://example.com/spec", "https://example.org/url-error"}
	res, err := callTool(cs, "chat", map[string]any{"prompt": "summarise", "urls": urls})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %s", err, resultText(res))
	}
	var got []struct{ URL, Status string }
	metaOf(t, res, "urls", &got)
	want := []struct{ URL, Status string }{{"https://example.com/spec", "URL_RETRIEVAL_STATUS_SUCCESS"}, {"https://example.org/url-error", "URL_RETRIEVAL_STATUS_ERROR"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("_meta.urls = %+v, want %+v", got, want)
	}
	last := res.Content[len(res.Content)-1].(*mcp.TextContent).Text
	if !strings.Contains(last, "could not read https://example.org/url-error (ERROR)") || strings.Contains(last, "example.com/spec") {
		t.Errorf("note on URLs not read: %q", last)
	}
	reqs := h.api.Requests()
	r := reqs[len(reqs)-1]
	if !r.URLContext() || !strings.HasSuffix(r.LastUserText, "URLs:\nhttps://example.com/spec\nhttps://example.org/url-error") {
		t.Errorf("request urlContext %v, prompt %q", r.URLContext(), r.LastUserText)
	}
}

// TestChatURLsNormalised: a URL whose host has other forms than ASCII
// (full-width letters and dots, an internationalised name) reaches the
// API with its host as a URL parser maps it: what was judged is what
// Gemini reads.
func TestChatURLsNormalised(t *testing.T) {
	h := newHostEnv(t, map[string]any{})
	cs := h.stdio(t, nil, "")
	res, err := callTool(cs, "chat", map[string]any{"prompt": "summarise", "urls": []any{"https://ｅｘａｍｐｌｅ．ｃｏｍ/spec", "https://bücher.de/katalog"}})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %s", err, resultText(res))
	}
	reqs := h.api.Requests()
	r := reqs[len(reqs)-1]
	if !r.URLContext() || !strings.HasSuffix(r.LastUserText, "URLs:\nhttps://example.com/spec\nhttps://xn--bcher-kva.de/katalog") {
		t.Errorf("request urlContext %v, prompt %q", r.URLContext(), r.LastUserText)
	}
	// The same URL in two forms is the same URL.
	callErr(t, cs, "chat", map[string]any{"prompt": "read", "urls": []any{"https://example.com/spec", "https://ＥＸＡＭＰＬＥ.com/spec"}}, "urls[1]", "given twice")
}

func TestChatURLsRefused(t *testing.T) {
	h := newHostEnv(t, map[string]any{})
	cs := h.stdio(t, nil, "")
	for url, says := range map[string]string{
		"http://127.0.0.1:8080/admin":               "loopback",
		"http://169.254.169.254/latest/meta-data/":  "link-local",
		"https://10.0.0.5/":                         "private",
		"http://100.64.0.1/":                        "reserved",
		"https://metadata.google.internal/computeM": ".internal",
		"https://user:hunter2@example.com/":         "user information",
		"file:///etc/passwd":                        "only http",
		// Hosts a URL parser maps to the ones above (full-width digits,
		// letters and dots, U+3002), and a URL that would be two in the
		// prompt's text.
		"http://１２７.０.０.１/admin":                   "127.0.0.1, a loopback",
		"http://169.254.169.２５４/latest/meta-data/": "169.254.169.254, a loopback, private, link-local",
		"http://10。0。0。5/":                         "10.0.0.5",
		"https://ｍｅｔａｄａｔａ．ｇｏｏｇｌｅ．ｉｎｔｅｒｎａｌ/computeMetadata/v1/": "metadata.google.internal names this machine",
		"https://example.org/a http://127.0.0.1/":              "white space",
	} {
		text := callErr(t, cs, "chat", map[string]any{"prompt": "read", "urls": []any{"https://example.com/", url}}, "urls[1]", says)
		if strings.Contains(text, "hunter2") {
			t.Errorf("the error shows the URL's password: %q", text)
		}
	}
	many := make([]any, 21)
	for i := range many {
		many[i] = fmt.Sprintf("https://example.com/%d", i)
	}
	callErr(t, cs, "chat", map[string]any{"prompt": "read", "urls": many}, "21 URLs", "limit of 20")
	callErr(t, cs, "chat-reply", map[string]any{"prompt": "read", "sessionId": "latest", "urls": []any{"http://localhost/"}}, "localhost")
	for _, r := range h.api.Requests() {
		if r.Method == fakeapi.MethodStream {
			t.Errorf("a refused call reached the API: %q", r.LastUserText)
		}
	}
}

func TestChatResponseSchema(t *testing.T) {
	h := newHostEnv(t, map[string]any{})
	cs := h.stdio(t, nil, "")
	schema := map[string]any{
		"type":     "object",
		"required": []any{"name", "stars"},
		"properties": map[string]any{
			"name":  map[string]any{"type": "string"},
			"stars": map[string]any{"type": "integer", "minimum": 0},
		},
	}
	res, err := callTool(cs, "chat", map[string]any{"prompt": "describe the repo", "response_schema": schema})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %s", err, resultText(res))
	}
	if want := map[string]any{"name": "fake", "stars": float64(0)}; !reflect.DeepEqual(res.StructuredContent, want) {
		t.Errorf("structuredContent %#v, want %#v", res.StructuredContent, want)
	}
	if resultText(res) != `{"name":"fake","stars":0}` {
		t.Errorf("text %q", resultText(res))
	}
	reqs := h.api.Requests()
	if sc, mime := reqs[len(reqs)-1].ResponseSchema(); mime != "application/json" || !strings.Contains(string(sc), `"stars"`) {
		t.Errorf("sent responseJsonSchema %s, responseMimeType %q", sc, mime)
	}

	// An answer that does not satisfy the schema is an error that keeps
	// the answer.
	text := callErr(t, cs, "chat", map[string]any{"prompt": `describe [[json:{"name":"x","stars":-3}]]`, "response_schema": schema},
		"does not satisfy response_schema", `{"name":"x","stars":-3}`, "chat-reply")
	if !strings.Contains(text, "minimum") {
		t.Errorf("the error does not say which rule failed: %q", text)
	}
	callErr(t, cs, "chat", map[string]any{"prompt": `describe [[json:{"name":"x","stars":1} {"b":2}]]`, "response_schema": schema},
		"does not satisfy response_schema", "more than one JSON value")
	callErr(t, cs, "chat", map[string]any{"prompt": `describe [[json:{"name":"x",}]]`, "response_schema": schema},
		"does not satisfy response_schema", "not JSON")
	// JSON cut at the model's output limit is given as it came, said cut,
	// with no structuredContent.
	res, err = callTool(cs, "chat", map[string]any{"prompt": `describe [[json:{"name":"x","st}]] [[finish-text:MAX_TOKENS]]`, "response_schema": schema})
	if err != nil || res.IsError || res.StructuredContent != nil || res.Meta["finishReason"] != "MAX_TOKENS" || resultText(res) != `{"name":"x","st}` {
		t.Errorf("a cut JSON answer: %v %+v", err, res)
	}

	// Schemas that are not JSON Schema, or not of an object, or too
	// large, are refused before any call.
	n := len(h.api.Requests())
	callErr(t, cs, "chat", map[string]any{"prompt": "x", "response_schema": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": 5}}}},
		"response_schema is not a valid JSON Schema")
	callErr(t, cs, "chat", map[string]any{"prompt": "x", "response_schema": map[string]any{"type": "array"}}, `"type": "object"`)
	callErr(t, cs, "chat", map[string]any{"prompt": "x", "response_schema": map[string]any{"type": "object", "$ref": "https://example.com/s.json"}},
		"response_schema asks for what the Gemini API or this server does not take", "points outside the schema")
	callErr(t, cs, "chat", map[string]any{"prompt": "x", "response_schema": map[string]any{"type": "object", "description": strings.Repeat("d", 40<<10)}},
		"over this server's limit")
	if got := len(h.api.Requests()); got != n {
		t.Errorf("%d requests reached the API for refused schemas", got-n)
	}
}

// hostileSchema is a response_schema of levels levels of anyOf of two
// references to the next level: 2^levels subschemas once its references
// are followed, in 2.6 KB for 40 levels.
func hostileSchema(levels int) map[string]any {
	defs := map[string]any{}
	for i := range levels {
		next := map[string]any{"$ref": fmt.Sprintf("#/$defs/d%d", i+1)}
		defs[fmt.Sprintf("d%d", i)] = map[string]any{"anyOf": []any{next, next}}
	}
	defs[fmt.Sprintf("d%d", levels)] = map[string]any{"type": "string"}
	return map[string]any{"type": "object", "$defs": defs, "properties": map[string]any{"a": map[string]any{"$ref": "#/$defs/d0"}}}
}

// TestChatResponseSchemaRefusedFirst: a response_schema whose checking
// would not end, or would cost without bound, or that is not valid JSON
// Schema, is refused at once with the reason, and the fake Gemini API
// sees no request for it. Before, the 2.6 KB schema of forty levels of
// anyOf was sent, and checking the answer {"a":5} against it ran on
// (2^40 paths) after the client gave up; the $ref loop was sent, and
// checking its answer overflowed the stack, which killed the server; and
// "type": "numbr" was sent, a billed call. A recursive schema (a tree),
// which ends with the answer, is still taken.
func TestChatResponseSchemaRefusedFirst(t *testing.T) {
	h := newHostEnv(t, map[string]any{})
	cs := h.stdio(t, nil, "")
	before := len(h.api.Requests())
	start := time.Now()
	text := callErr(t, cs, "chat", map[string]any{"prompt": `answer [[json:{"a":5}]]`, "response_schema": hostileSchema(40)},
		"response_schema is too complex for this server", "this server's limit")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the refusal took %v", d)
	}
	t.Logf("hostile schema: %s", text)
	loop := map[string]any{"type": "object", "$defs": map[string]any{"x": map[string]any{"anyOf": []any{map[string]any{"$ref": "#/$defs/x"}}}},
		"properties": map[string]any{"a": map[string]any{"$ref": "#/$defs/x"}}}
	callErr(t, cs, "chat", map[string]any{"prompt": `answer [[json:{"a":5}]]`, "response_schema": loop},
		"response_schema is not a valid JSON Schema", "would never end")
	for _, c := range []struct {
		schema map[string]any
		says   []string
	}{
		{map[string]any{"type": "object", "properties": map[string]any{"age": map[string]any{"type": "numbr"}}},
			[]string{"response_schema is not a valid JSON Schema", "#/properties/age", `"numbr" is not a JSON Schema type`, "integer"}},
		{map[string]any{"type": "object", "properties": map[string]any{"tags": map[string]any{"type": []any{"array", "nul"}}}},
			[]string{"response_schema is not a valid JSON Schema", `"nul" is not a JSON Schema type`}},
		{map[string]any{"type": "object", "required": "name"},
			[]string{"response_schema is not a valid JSON Schema", "required", "not a list of strings"}},
		{map[string]any{"type": "object", "properties": map[string]any{"l": map[string]any{"type": "array", "minItems": -1}}},
			[]string{"response_schema is not a valid JSON Schema", "minItems", "not a non-negative integer"}},
		{map[string]any{"type": "object", "properties": map[string]any{"s": map[string]any{"pattern": "(unclosed"}}},
			[]string{"response_schema is not a valid JSON Schema", "not a regular expression"}},
		{map[string]any{"type": "object", "properties": map[string]any{"s": "string"}},
			[]string{"response_schema is not a valid JSON Schema", "#/properties/s", "a schema is a JSON object or a boolean"}},
		{map[string]any{"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"},
			[]string{"does not take", "draft 2020-12", "draft-07"}},
		{map[string]any{"type": "object", "properties": map[string]any{"l": map[string]any{"items": []any{map[string]any{"type": "string"}}}}},
			[]string{"does not take", "prefixItems"}},
		{map[string]any{"type": "object", "$defs": map[string]any{"n": map[string]any{"$dynamicAnchor": "n"}}},
			[]string{"does not take", "dynamic references"}},
	} {
		callErr(t, cs, "chat", map[string]any{"prompt": "x", "response_schema": c.schema}, c.says...)
	}
	if got := len(h.api.Requests()); got != before {
		t.Errorf("%d requests reached the fake Gemini API for refused schemas", got-before)
	}

	// The server is alive, and takes a recursive schema: a tree.
	tree := map[string]any{"type": "object", "required": []any{"root"},
		"$defs": map[string]any{"node": map[string]any{"type": "object", "required": []any{"name"}, "properties": map[string]any{
			"name":     map[string]any{"type": "string"},
			"children": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/$defs/node"}}}}},
		"properties": map[string]any{"root": map[string]any{"$ref": "#/$defs/node"}}}
	answer := `{"root":{"name":"a","children":[{"name":"b","children":[{"name":"c"}]},{"name":"d"}]}}`
	res, err := callTool(cs, "chat", map[string]any{"prompt": "a tree [[json:" + answer + "]]", "response_schema": tree})
	if err != nil || res.IsError {
		t.Fatalf("chat with a recursive schema: %v %s", err, resultText(res))
	}
	var want any
	if err := json.Unmarshal([]byte(answer), &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.StructuredContent, want) {
		t.Errorf("structuredContent %v, want %s", res.StructuredContent, answer)
	}
	callErr(t, cs, "chat", map[string]any{"prompt": `a tree [[json:{"root":{"name":"a","children":[{"children":[]}]}}]]`, "response_schema": tree},
		"does not satisfy response_schema", "at /root/children/0: required: missing \"name\"")
}

func TestCLIBackendRefusesBuiltins(t *testing.T) {
	e := newEnv(t)
	cs := connect(t, e.command())
	callErr(t, cs, "chat", map[string]any{"prompt": "x", "google_search": true}, "google_search: the oneshot backend cannot do this", "google_web_search", "--backend api")
	callErr(t, cs, "chat", map[string]any{"prompt": "x", "urls": []any{"https://example.com/"}}, "urls: the oneshot backend cannot do this", "web_fetch")
	callErr(t, cs, "chat", map[string]any{"prompt": "x", "response_schema": map[string]any{"type": "object"}}, "response_schema: the oneshot backend")
	callErr(t, cs, "chat", map[string]any{"prompt": "x", "code_execution": true}, "code_execution: the oneshot backend cannot do this", "--backend api")
	_, err := callTool(cs, "debug", map[string]any{"error_description": "boom", "google_search": true})
	if we := wireError(t, err); we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(we.Message, "google_search: the oneshot backend") {
		t.Errorf("debug with google_search on the CLI backend: %v", err)
	}
	_, err = callTool(cs, "debug", map[string]any{"error_description": "boom", "code_execution": true})
	if we := wireError(t, err); we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(we.Message, "code_execution: the oneshot backend") ||
		!strings.Contains(string(we.Data), `"field":"code_execution"`) {
		t.Errorf("debug with code_execution on the CLI backend: %v %s", err, we.Data)
	}
}

// TestExpertOutputSchemas: precommit and codereview declare an
// outputSchema, and their results' structuredContent conforms to the
// schema the server lists, verdict and issues included.
func TestExpertOutputSchemas(t *testing.T) {
	e := newExpertEnv(t)
	e.repo(t, "util.go", "package app\n")
	key := "AKIA" + strings.Repeat("Q7", 8)
	e.write(t, "repo/config.go", "package app\n\nconst awsKey = \""+key+"\"\n")
	cs := e.stdio(t)
	tools, err := cs.ListTools(guardCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas := map[string]*jsonschema.Resolved{}
	for _, tool := range tools.Tools {
		if tool.OutputSchema == nil {
			continue
		}
		raw, _ := json.Marshal(tool.OutputSchema)
		var s jsonschema.Schema
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		rs, err := s.Resolve(nil)
		if err != nil {
			t.Fatalf("%s's outputSchema: %v", tool.Name, err)
		}
		schemas[tool.Name] = rs
	}
	if schemas["precommit"] == nil || schemas["codereview"] == nil || schemas["thinkdeep"] != nil || schemas["chat"] != nil {
		t.Fatalf("tools with an outputSchema: %v, want precommit and codereview among them, not thinkdeep or chat", slices.Sorted(maps.Keys(schemas)))
	}
	check := func(tool string, args map[string]any) map[string]any {
		t.Helper()
		res, err := callExpert(t, cs, tool, args)
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", tool, err, res)
		}
		raw, _ := json.Marshal(res.StructuredContent)
		var v map[string]any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatalf("%s's structuredContent %s: %v", tool, raw, err)
		}
		if err := schemas[tool].Validate(v); err != nil {
			t.Errorf("%s's structuredContent %s does not conform: %v", tool, raw, err)
		}
		return v
	}
	p := check("precommit", map[string]any{"path": "repo"})
	if p["verdict"] != "no-go" || p["verdictBy"] != "server" || len(p["secrets"].([]any)) != 1 || strings.Contains(fmt.Sprint(p), key) {
		t.Errorf("precommit's structured content %v", p)
	}
	c := check("codereview", map[string]any{"files": []any{"repo/util.go"}, "context": "a helper"})
	if _, ok := c["issues"].(map[string]any); !ok || c["answer"] != nil {
		t.Errorf("codereview's structured content %v: want its issues, and not the answer again", c)
	}
}

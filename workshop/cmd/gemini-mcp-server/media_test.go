package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// Media files and Gemini 3 through the server binary, on the fake Gemini
// API (helpers in expert_test.go and mcphost_test.go).

// TestAnalyzeScreenshotAndPDF: analyze on a PNG screenshot (named as it
// were not one: the content decides) and on a PDF spec. The screenshot
// goes inline, the PDF, past --max-inline-bytes, through the Files API;
// a continuation sends the uploaded PDF again without uploading it, and
// once the API has dropped it, uploads it again. A zip is refused. The
// uploads are deleted when the server stops.
func TestAnalyzeScreenshotAndPDF(t *testing.T) {
	t.Parallel()
	e := newExpertEnv(t)
	png := "\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR" + strings.Repeat("\x00\x01", 500)
	pdf := "%PDF-1.7\n" + strings.Repeat("1 0 obj << /Type /Page >> endobj\n", 8000)
	e.write(t, "shots/login-screen.dat", png)
	e.write(t, "docs/spec.pdf", pdf)
	e.write(t, "bundle.zip", "PK\x03\x04\x14\x00\x00\x00\x08\x00")
	cs := e.stdio(t, "--max-inline-bytes", "200000")

	_, meta := expertOK(t, cs, "analyze", map[string]any{"question": "does the login screen match the spec?",
		"files": []string{"shots/login-screen.dat", "docs/spec.pdf"}})
	reqs := e.streams()
	r := reqs[len(reqs)-1]
	if len(r.Media) != 2 || r.Media[0].MIMEType != "image/png" || r.Media[0].Size != len(png) || r.Media[0].FileURI != "" ||
		r.Media[1].MIMEType != "application/pdf" || r.Media[1].FileURI == "" {
		t.Fatalf("media the API received: %+v", r.Media)
	}
	if n := e.api.Uploads(); n != 1 {
		t.Errorf("%d uploads, want 1", n)
	}
	if meta["model"] != "gemini-2.5-flash" {
		t.Errorf("_meta.model %v", meta["model"])
	}
	processed, _ := meta["filesProcessed"].([]any)
	if len(processed) != 2 {
		t.Errorf("filesProcessed %v", meta["filesProcessed"])
	}
	id, _ := meta["continuationId"].(string)

	// Continued: the history's upload is sent again, not uploaded again.
	expertOK(t, cs, "analyze", map[string]any{"question": "and the error states?", "continuation_id": id, "files": []string{"docs/spec.pdf"}})
	reqs = e.streams()
	if r := reqs[len(reqs)-1]; r.Status != 200 || len(r.Media) != 2 || e.api.Uploads() != 1 {
		t.Errorf("continuation: status %d, media %+v, %d uploads", r.Status, r.Media, e.api.Uploads())
	}
	// The API dropped it between turns: uploaded again, the turn answers.
	e.api.ExpireFiles()
	expertOK(t, cs, "analyze", map[string]any{"question": "and the footer?", "continuation_id": id, "files": []string{"docs/spec.pdf"}})
	reqs = e.streams()
	if r := reqs[len(reqs)-1]; r.Status != 200 || len(r.Media) != 2 || e.api.Uploads() != 2 {
		t.Errorf("after expiry: status %d, media %+v, %d uploads", r.Status, r.Media, e.api.Uploads())
	}

	// A binary of no type Gemini reads is refused, and nothing is sent.
	n := len(e.streams())
	_, err := callExpert(t, cs, "analyze", map[string]any{"question": "what is in it?", "files": []string{"bundle.zip"}})
	if we := wireError(t, err); !strings.Contains(we.Message, "application/zip") || !strings.Contains(we.Message, "PDF") {
		t.Errorf("zip: %v", we)
	}
	if len(e.streams()) != n {
		t.Error("a call with a zip reached the API")
	}

	// The server stops: its uploads are deleted.
	if len(e.api.Files()) != 1 {
		t.Fatalf("files before the server stops: %+v", e.api.Files())
	}
	cs.Close()
	if f := e.api.Files(); len(f) != 0 {
		t.Errorf("files after the server stopped: %+v", f)
	}
}

// TestChatMediaInline: chat's files take media too; under the default
// inline limit a PDF goes inline.
func TestChatMediaInline(t *testing.T) {
	t.Parallel()
	e := newExpertEnv(t)
	e.write(t, "spec.pdf", "%PDF-1.4\nsmall")
	cs := e.stdio(t)
	res, err := cs.CallTool(guardCtx(t), &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "summarise", "files": []string{"spec.pdf"}}})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %+v", err, res)
	}
	reqs := e.streams()
	if r := reqs[len(reqs)-1]; len(r.Media) != 1 || r.Media[0].MIMEType != "application/pdf" || r.Media[0].FileURI != "" || e.api.Uploads() != 0 {
		t.Errorf("media %+v, %d uploads", r.Media, e.api.Uploads())
	}
}

// TestGemini3ToolThreadThroughServer: a three-turn thread of tool calls on
// a Gemini 3 model through the server binary. The fake refuses a function
// call sent back without its thought signature (400, as the API does): no
// request is refused, and every model content of the last request carries
// its signature.
func TestGemini3ToolThreadThroughServer(t *testing.T) {
	t.Parallel()
	h := newHostEnv(t, map[string]any{"down": down(t, map[string]any{"trust": true})})
	cs := h.stdio(t, nil, "")
	h.connected(t, "down")
	args := map[string]any{"prompt": `one [[call:mcp_down_echo:{"text":"a"}]]`, "model": "gemini-3-pro-preview"}
	res, err := cs.CallTool(guardCtx(t), &mcp.CallToolParams{Name: "chat", Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %+v", err, res)
	}
	if res.Meta["model"] != "gemini-3-pro-preview" {
		t.Errorf("_meta.model %v", res.Meta["model"])
	}
	id, _ := res.Meta["sessionId"].(string)
	chat(t, cs, "chat-reply", map[string]any{"sessionId": id, "prompt": `two [[call:mcp_down_echo:{"text":"b"}]]`, "model": "gemini-3-pro-preview"})
	chat(t, cs, "chat-reply", map[string]any{"sessionId": id, "prompt": `three [[call:mcp_down_echo:{"text":"c"}]]`, "model": "gemini-3-pro-preview"})
	var last fakeapi.Request
	for _, r := range h.api.Requests() {
		if r.Method != fakeapi.MethodStream {
			continue
		}
		if r.Status != 200 {
			t.Fatalf("the fake refused a request: %d %s", r.Status, r.Answer)
		}
		last = r
	}
	// prompt, call, result, answer × 2, then prompt, call, result.
	if last.NumContents != 11 {
		t.Fatalf("the last request sent %d contents, want 11", last.NumContents)
	}
	if n := bytes.Count(last.Body, []byte(`"thoughtSignature"`)); n != 5 {
		t.Errorf("the last request carries %d thought signatures, want 5 (3 calls, 2 answers)", n)
	}
}

// TestModelsResource: gemini-mcp://models lists the models the fake API
// serves that answer prompts, with the default, the aliases, the context
// window and the options each takes.
func TestModelsResource(t *testing.T) {
	t.Parallel()
	h := newHostEnv(t, map[string]any{})
	gen := []string{"generateContent", "countTokens"}
	h.api.SetModels([]fakeapi.Model{
		{Name: "models/gemini-2.5-flash", InputTokenLimit: 1048576, Methods: append(gen, "createCachedContent"), Thinking: true},
		{Name: "models/gemini-3-pro-preview", InputTokenLimit: 1048576, Methods: gen, Thinking: true},
		{Name: "models/gemini-2.0-flash-lite", InputTokenLimit: 1048576, Methods: gen},
		{Name: "models/text-embedding-004", InputTokenLimit: 2048, Methods: []string{"embedContent"}},
	})
	cs := h.stdio(t, nil, "")
	res, err := cs.ReadResource(guardCtx(t), &mcp.ReadResourceParams{URI: "gemini-mcp://models"})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Models []struct {
			Name            string
			Aliases         []string
			Default, Stable bool
			InputTokenLimit int
			Thinking        string
			GoogleSearch    bool
			Caching         bool
		}
	}
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &got); err != nil {
		t.Fatal(err)
	}
	byName := map[string]int{}
	for i, m := range got.Models {
		byName[m.Name] = i
	}
	if len(got.Models) != 3 {
		t.Fatalf("models %s", res.Contents[0].Text)
	}
	f, p, l := got.Models[byName["gemini-2.5-flash"]], got.Models[byName["gemini-3-pro-preview"]], got.Models[byName["gemini-2.0-flash-lite"]]
	if !f.Default || !f.Stable || len(f.Aliases) != 1 || f.Aliases[0] != "flash" || f.InputTokenLimit != 1048576 || f.Thinking != "budget" ||
		!f.GoogleSearch || !f.Caching {
		t.Errorf("gemini-2.5-flash: %+v", f)
	}
	if p.Default || p.Stable || len(p.Aliases) != 0 || p.Thinking != "level" || !p.GoogleSearch || p.Caching {
		t.Errorf("gemini-3-pro-preview: %+v", p)
	}
	if l.Thinking != "none" || l.GoogleSearch || len(l.Aliases) != 1 || l.Aliases[0] != "flash-lite" {
		t.Errorf("gemini-2.0-flash-lite: %+v", l)
	}
}

package fakeapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"google.golang.org/genai"
)

// Tests through Google's own SDK: what the Server sends decodes into the
// genai types, and what the SDK sends is what the Server reads.

func sdkClient(t *testing.T, s *Server) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: "test-key", Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: s.URL() + "/"},
		HTTPClient:  &http.Client{},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// streamParts collects the parts of a streamed answer, event by event.
func streamParts(t *testing.T, c *genai.Client, model string, contents []*genai.Content, cfg *genai.GenerateContentConfig) ([][]*genai.Part, error) {
	t.Helper()
	var events [][]*genai.Part
	for r, err := range c.Models.GenerateContentStream(testCtx(t), model, contents, cfg) {
		if err != nil {
			return events, err
		}
		if len(r.Candidates) > 0 && r.Candidates[0].Content != nil {
			events = append(events, r.Candidates[0].Content.Parts)
		}
	}
	return events, nil
}

func apiCode(err error) (int, string) {
	var e genai.APIError
	if errors.As(err, &e) {
		return e.Code, e.Message
	}
	return 0, fmt.Sprint(err)
}

func TestThoughtSignaturesThroughSDK(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	c := sdkClient(t, s)
	const model = "gemini-3-pro-preview"
	tools := &genai.GenerateContentConfig{Tools: []*genai.Tool{{FunctionDeclarations: []*genai.FunctionDeclaration{{Name: "f"}, {Name: "g"}}}}}
	prompt := genai.NewContentFromText(`[[call:f:{"a":1}]] [[call:g:{}]]`, genai.RoleUser)

	// A call answer: the first functionCall part is signed, the parallel
	// one after it is not.
	events, err := streamParts(t, c, model, []*genai.Content{prompt}, tools)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 1 || len(events[0]) != 2 {
		t.Fatalf("events %v", events)
	}
	f, g := events[0][0], events[0][1]
	if f.FunctionCall == nil || !bytes.HasPrefix(f.ThoughtSignature, []byte(SignaturePrefix)) || g.FunctionCall == nil || g.ThoughtSignature != nil {
		t.Fatalf("parts %+v %+v: want the first call signed, the second not", f, g)
	}

	results := genai.NewContentFromParts([]*genai.Part{
		genai.NewPartFromFunctionResponse("f", map[string]any{"ok": 1}),
		genai.NewPartFromFunctionResponse("g", map[string]any{"ok": 2}),
	}, genai.RoleUser)
	call := &genai.Content{Role: genai.RoleModel, Parts: events[0]}

	// Sent back as received: answered, and the text answer ends with an
	// event whose only part is an empty text part with the signature.
	events, err = streamParts(t, c, model, []*genai.Content{prompt, call, results}, tools)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(events); n != 2 || events[0][0].Text == "" || events[0][0].ThoughtSignature != nil ||
		len(events[1]) != 1 || events[1][0].Text != "" || !bytes.HasPrefix(events[1][0].ThoughtSignature, []byte(SignaturePrefix)) {
		t.Fatalf("text answer events %+v", events)
	}

	// Without the first call's signature: the API's 400.
	unsigned := &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: f.FunctionCall}, g}}
	_, err = streamParts(t, c, model, []*genai.Content{prompt, unsigned, results}, tools)
	if code, msg := apiCode(err); code != 400 || msg != MissingSignatureMessage("f", 2) {
		t.Errorf("unsigned call: %d %q", code, msg)
	}
	// A signature the Server never gave.
	forged := &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{{FunctionCall: f.FunctionCall, ThoughtSignature: []byte("forged")}, g}}
	_, err = streamParts(t, c, model, []*genai.Content{prompt, forged, results}, tools)
	if code, msg := apiCode(err); code != 400 || msg != CorruptSignatureMessage {
		t.Errorf("forged signature: %d %q", code, msg)
	}
	// Gemini 2.5 neither signs nor checks.
	events, err = streamParts(t, c, "gemini-2.5-flash", []*genai.Content{prompt, unsigned, results}, tools)
	if err != nil || len(events) != 1 || events[0][0].ThoughtSignature != nil {
		t.Errorf("gemini-2.5: %v %+v", err, events)
	}
}

func TestFilesAPIThroughSDK(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.SetProcessingGets(1)
	c := sdkClient(t, s)
	ctx := testCtx(t)
	// Over the SDK's 8 MiB chunk, so that the upload takes two requests.
	data := bytes.Repeat([]byte("%PDF-1.7 fake "), (9<<20)/14)
	f, err := c.Files.Upload(ctx, bytes.NewReader(data), &genai.UploadFileConfig{MIMEType: "application/pdf", DisplayName: "spec.pdf"})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if !strings.HasPrefix(f.Name, "files/") || f.MIMEType != "application/pdf" || f.SizeBytes == nil || *f.SizeBytes != int64(len(data)) ||
		f.State != genai.FileStateProcessing || f.URI != s.URL()+"/v1beta/"+f.Name || f.DisplayName != "spec.pdf" ||
		f.Sha256Hash != base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%x", sum)) || f.ExpirationTime.IsZero() {
		t.Fatalf("uploaded %+v", f)
	}
	n := 0
	for _, r := range s.Requests() {
		if r.Method == MethodUpload {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d upload requests, want 2 chunks", n)
	}
	use := []*genai.Content{genai.NewContentFromParts([]*genai.Part{
		genai.NewPartFromURI(f.URI, f.MIMEType), genai.NewPartFromText("what is this?")}, genai.RoleUser)}

	// PROCESSING: refused; files.get once more makes it ACTIVE.
	_, err = streamParts(t, c, "gemini-2.5-flash", use, nil)
	if code, msg := apiCode(err); code != 400 || msg != FileNotActiveMessage(strings.TrimPrefix(f.Name, "files/")) {
		t.Errorf("processing file: %d %q", code, msg)
	}
	for _, want := range []genai.FileState{genai.FileStateProcessing, genai.FileStateActive} {
		got, err := c.Files.Get(ctx, f.Name, nil)
		if err != nil || got.State != want {
			t.Fatalf("files.get: %v %+v, want %s", err, got, want)
		}
	}
	if _, err := streamParts(t, c, "gemini-2.5-flash", use, nil); err != nil {
		t.Fatal(err)
	}
	last := s.Requests()[len(s.Requests())-1]
	if len(last.Media) != 1 || last.Media[0].FileURI != f.URI || last.Media[0].MIMEType != "application/pdf" {
		t.Errorf("recorded media %+v", last.Media)
	}

	// Deleted: gone for files.get and for generateContent.
	if _, err := c.Files.Delete(ctx, f.Name, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Files.Get(ctx, f.Name, nil); err == nil {
		t.Error("files.get of a deleted file succeeded")
	}
	_, err = streamParts(t, c, "gemini-2.5-flash", use, nil)
	if code, msg := apiCode(err); code != 403 || msg != FileNotFoundMessage(strings.TrimPrefix(f.Name, "files/")) {
		t.Errorf("deleted file: %d %q", code, msg)
	}
	if d := s.Deleted(); len(d) != 1 || d[0] != f.Name {
		t.Errorf("deleted %q", d)
	}
}

func TestInlineDataThroughSDK(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	c := sdkClient(t, s)
	png := []byte("\x89PNG\r\n\x1a\n fake image")
	use := []*genai.Content{genai.NewContentFromParts([]*genai.Part{
		genai.NewPartFromBytes(png, "image/png"), genai.NewPartFromText("what is this?")}, genai.RoleUser)}
	if _, err := streamParts(t, c, "gemini-2.5-flash", use, nil); err != nil {
		t.Fatal(err)
	}
	r := s.Requests()[0]
	if len(r.Media) != 1 || r.Media[0].MIMEType != "image/png" || r.Media[0].Size != len(png) ||
		r.Media[0].SHA256 != fmt.Sprintf("%x", sha256.Sum256(png)) || r.Media[0].Role != "user" {
		t.Errorf("recorded media %+v", r.Media)
	}
	// A request over the API's limit is refused as the API refuses it.
	big := []*genai.Content{genai.NewContentFromParts([]*genai.Part{
		genai.NewPartFromBytes(make([]byte, InlineRequestLimit), "image/png")}, genai.RoleUser)}
	_, err := streamParts(t, c, "gemini-2.5-flash", big, nil)
	if code, msg := apiCode(err); code != 400 || msg != PayloadTooLargeMessage {
		t.Errorf("too big: %d %q", code, msg)
	}
}

// TestSkipSignatureAccepted: the documented stand-in for a signature, as
// the Gemini CLI sends it for calls it made itself, passes.
func TestSkipSignatureAccepted(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	body := toolBody(t, []string{"f"}, userText("go"),
		map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"name": "f", "args": map[string]any{}}, "thoughtSignature": SkipSignature}}},
		map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"name": "f", "response": map[string]any{"ok": true}}}}})
	resp, b := post(t, s, "gemini-3-pro-preview", MethodStream, body)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
}

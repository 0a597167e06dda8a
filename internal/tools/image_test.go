package tools

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/mcptest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

var (
	pngA = []byte("\x89PNG\r\n\x1a\nimage-a")
	pngB = []byte("\x89PNG\r\n\x1a\nimage-b")
)

// imageServer serves the tools with a stub backend that answers with
// images, to a client of protocol 2025-11-25 whose user answers each
// question with answer (nil: the client cannot be asked). It returns the
// client, the backend, the project root and the questions asked.
func imageServer(t *testing.T, b backend.Backend, answer func(q string) *mcp.ElicitResult) (*mcp.ClientSession, string, func() []string) {
	t.Helper()
	return imageServerOf(t, b, answer, "2025-11-25")
}

// imageServerOf is imageServer for a client of protocol.
func imageServerOf(t *testing.T, b backend.Backend, answer func(q string) *mcp.ElicitResult, protocol string) (*mcp.ClientSession, string, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var asked []string
	opts := &mcp.ClientOptions{}
	if answer != nil {
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params.Message)
			mu.Unlock()
			return answer(req.Params.Message), nil
		}
	}
	cs, root := imageServerWith(t, b, opts, protocol)
	return cs, root, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), asked...)
	}
}

// imageServerWith is imageServerOf for a client with opts.
func imageServerWith(t *testing.T, b backend.Backend, opts *mcp.ClientOptions, protocol string) (*mcp.ClientSession, string) {
	t.Helper()
	store := memstore.New(session.Options{})
	t.Cleanup(func() { store.Close() })
	root := realTemp(t)
	d := &Deps{Conv: newConv(conversation.Options{Backend: b, Store: store, DefaultCwd: root}), MaxPromptBytes: 1 << 20,
		ProjectRoot: root}
	s := mcp.NewServer(&mcp.Implementation{Name: "gemini-mcp-server", Version: "t"}, nil)
	addAll(s, d)
	return mcptest.Connect(t, s, &mcptest.Options{ClientOptions: opts, Session: &mcp.ClientSessionOptions{ProtocolVersion: protocol}}), root
}

func imageStub(images ...[]byte) *stubRunner {
	r := &stubRunner{name: "api", answer: backend.Answer{Model: "gemini-2.5-flash-image"}}
	for _, im := range images {
		r.answer.Images = append(r.answer.Images, backend.Image{MIMEType: "image/png", Data: im})
	}
	return r
}

func yes(string) *mcp.ElicitResult {
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"save": true}}
}

func allText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			b.WriteString(t.Text + "\n")
		}
	}
	return b.String()
}

func imagesOf(res *mcp.CallToolResult) [][]byte {
	var out [][]byte
	for _, c := range res.Content {
		if im, ok := c.(*mcp.ImageContent); ok {
			out = append(out, im.Data)
		}
	}
	return out
}

// TestImageTurn: the tool asks the backend for images, as a new session,
// with the aspect ratio, size and model given, and returns the model's
// text, its images as image content and _meta.
func TestImageTurn(t *testing.T) {
	t.Parallel()
	r := imageStub(pngA, pngB)
	cs, _, asked := imageServer(t, r, yes)
	res := call(t, cs, "image", map[string]any{"prompt": "a red fox", "aspect_ratio": "16:9", "size": "2K", "model": "gemini-2.5-flash-image"})
	if res.IsError {
		t.Fatalf("image failed: %s", allText(res))
	}
	turn := r.last()
	if turn.Builtins.Image == nil || *turn.Builtins.Image != (backend.ImageRequest{AspectRatio: "16:9", Size: "2K"}) ||
		turn.Model != "gemini-2.5-flash-image" || turn.Session != "" || turn.Prompt != "a red fox" {
		t.Errorf("the turn: %+v", turn)
	}
	if got := imagesOf(res); len(got) != 2 || !bytes.Equal(got[0], pngA) || !bytes.Equal(got[1], pngB) {
		t.Errorf("images %q", got)
	}
	if !strings.Contains(allText(res), "answer to a red fox") {
		t.Errorf("text %q", allText(res))
	}
	if res.Meta["model"] != "gemini-2.5-flash-image" || res.Meta["images"] != float64(2) || res.Meta["sessionId"] != nil || res.Meta["saved"] != nil {
		t.Errorf("_meta %v", res.Meta)
	}
	if len(asked()) != 0 {
		t.Errorf("asked %q without save_to", asked())
	}
}

// TestImageRefusals: bad arguments are refused with what to send
// instead, before the backend runs; a backend without image models
// refuses the turn, naming --backend api.
func TestImageRefusals(t *testing.T) {
	t.Parallel()
	r := imageStub(pngA)
	cs, root, _ := imageServer(t, r, yes)
	if err := os.WriteFile(filepath.Join(root, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"prompt": " "}, "prompt is empty"},
		{map[string]any{"prompt": "x", "aspect_ratio": "2:1"}, `aspect_ratio must be one of 1:1, 2:3, 3:2, 3:4, 4:3, 4:5, 5:4, 9:16, 16:9, 21:9, not "2:1"`},
		{map[string]any{"prompt": "x", "size": "8K"}, `size must be one of 1K, 2K, 4K, not "8K"; omit it for the model's default`},
		{map[string]any{"prompt": "x", "save_to": "../out.png"}, "is outside the project root"},
		{map[string]any{"prompt": "x", "save_to": "missing/out.png"}, "does not exist under the project root"},
		{map[string]any{"prompt": "x", "save_to": "out.txt"}, "ends in .txt"},
		{map[string]any{"prompt": "x", "files": []string{"nope.png"}}, "no file context"},
		{map[string]any{"prompt": "x", "sessionId": "s"}, `unknown argument "sessionId"`},
		{map[string]any{}, "missing properties"},
	} {
		res := call(t, cs, "image", c.args)
		if !res.IsError || !strings.Contains(allText(res), c.want) {
			t.Errorf("%v: %v %q, want an error saying %q", c.args, res.IsError, allText(res), c.want)
		}
	}
	if len(r.calls) != 0 {
		t.Errorf("the backend ran %d turns for refused calls", len(r.calls))
	}

	refusing := &refusingRunner{stubRunner: imageStub(pngA)}
	cs, _, _ = imageServer(t, refusing, yes)
	res := call(t, cs, "image", map[string]any{"prompt": "x"})
	if !res.IsError || !strings.Contains(allText(res), "--backend api") || !strings.Contains(allText(res), "image") {
		t.Errorf("refused turn: %q", allText(res))
	}
}

// refusingRunner is a Gemini CLI backend: it refuses the API's built-in
// tools, images among them.
type refusingRunner struct{ *stubRunner }

func (r *refusingRunner) Run(ctx context.Context, c backend.Turn) (*backend.Answer, error) {
	if err := c.Builtins.Refuse("gemini-cli"); err != nil {
		return nil, err
	}
	return r.stubRunner.Run(ctx, c)
}

// TestImageSave: with save_to, the images are saved after the user's
// yes, one question for them all (numbered when there are several); a no, a client that cannot ask, and
// an existing file without the second yes save nothing, and the images
// still come back.
func TestImageSave(t *testing.T) {
	t.Parallel()
	t.Run("confirmed", func(t *testing.T) {
		t.Parallel()
		cs, root, asked := imageServer(t, imageStub(pngA, pngB), yes)
		res := call(t, cs, "image", map[string]any{"prompt": "two foxes", "save_to": "fox.png"})
		if res.IsError {
			t.Fatal(allText(res))
		}
		for name, want := range map[string][]byte{"fox-1.png": pngA, "fox-2.png": pngB} {
			if got, err := os.ReadFile(filepath.Join(root, name)); err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: %q %v", name, got, err)
			}
		}
		if saved, _ := res.Meta["saved"].([]any); len(saved) != 2 || saved[0] != "fox-1.png" || saved[1] != "fox-2.png" {
			t.Errorf("_meta.saved %v", res.Meta["saved"])
		}
		if q := asked(); len(q) != 1 || !strings.Contains(q[0], "fox-1.png, fox-2.png") {
			t.Errorf("asked %q", q)
		}
		if len(imagesOf(res)) != 2 {
			t.Error("the images did not come back")
		}
	})
	t.Run("declined", func(t *testing.T) {
		t.Parallel()
		no := func(string) *mcp.ElicitResult { return &mcp.ElicitResult{Action: "decline"} }
		cs, root, asked := imageServer(t, imageStub(pngA), no)
		res := call(t, cs, "image", map[string]any{"prompt": "a fox", "save_to": "fox"})
		if res.IsError || len(imagesOf(res)) != 1 || !strings.Contains(allText(res), "the user said no") {
			t.Fatalf("declined: %v %q", res.IsError, allText(res))
		}
		if _, err := os.Stat(filepath.Join(root, "fox.png")); !os.IsNotExist(err) {
			t.Errorf("a declined image was saved: %v", err)
		}
		if len(asked()) != 1 || res.Meta["notSaved"] == nil {
			t.Errorf("asked %q, _meta %v", asked(), res.Meta)
		}
	})
	t.Run("client cannot ask", func(t *testing.T) {
		t.Parallel()
		cs, root, _ := imageServer(t, imageStub(pngA), nil)
		res := call(t, cs, "image", map[string]any{"prompt": "a fox", "save_to": "fox.png"})
		if res.IsError || len(imagesOf(res)) != 1 || !strings.Contains(allText(res), "cannot ask its user to confirm a save") {
			t.Fatalf("unasked: %v %q", res.IsError, allText(res))
		}
		if _, err := os.Stat(filepath.Join(root, "fox.png")); !os.IsNotExist(err) {
			t.Errorf("an unconfirmed image was saved: %v", err)
		}
	})
	t.Run("client of protocol 2026-07-28", func(t *testing.T) {
		// It is asked through input requests of the result (the go-sdk
		// client answers them by itself, from its elicitation handler):
		// a yes for both images, and a second one to replace a file.
		t.Parallel()
		cs, root, asked := imageServerOf(t, imageStub(pngA, pngB), yes, "2026-07-28")
		if err := os.WriteFile(filepath.Join(root, "fox-2.png"), []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		res := call(t, cs, "image", map[string]any{"prompt": "two foxes", "save_to": "fox.png"})
		if res.IsError || len(imagesOf(res)) != 2 || res.Meta["notSaved"] != nil {
			t.Fatalf("saved: %v %q %v", res.IsError, allText(res), res.Meta)
		}
		for name, want := range map[string][]byte{"fox-1.png": pngA, "fox-2.png": pngB} {
			if got, err := os.ReadFile(filepath.Join(root, name)); err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: %q %v", name, got, err)
			}
		}
		if q := asked(); len(q) != 2 || !strings.Contains(q[0], "fox-1.png, fox-2.png") || !strings.Contains(q[1], "fox-2.png already exists") {
			t.Errorf("asked %q, want the saves and the replacement", q)
		}

		no := func(string) *mcp.ElicitResult { return &mcp.ElicitResult{Action: "decline"} }
		cs, root, asked = imageServerOf(t, imageStub(pngA), no, "2026-07-28")
		res = call(t, cs, "image", map[string]any{"prompt": "a fox", "save_to": "fox.png"})
		if res.IsError || len(imagesOf(res)) != 1 || !strings.Contains(allText(res), "the user said no") {
			t.Fatalf("declined: %v %q", res.IsError, allText(res))
		}
		if _, err := os.Stat(filepath.Join(root, "fox.png")); !os.IsNotExist(err) || len(asked()) != 1 {
			t.Errorf("saved (%v) after a no; asked %q", err, asked())
		}
	})
	t.Run("client of protocol 2026-07-28 without elicitation", func(t *testing.T) {
		t.Parallel()
		cs, root, _ := imageServerOf(t, imageStub(pngA), nil, "2026-07-28")
		res := call(t, cs, "image", map[string]any{"prompt": "a fox", "save_to": "fox.png"})
		if res.IsError || len(imagesOf(res)) != 1 || !strings.Contains(allText(res), "cannot ask its user to confirm a save") {
			t.Fatalf("unasked: %v %q", res.IsError, allText(res))
		}
		if _, err := os.Stat(filepath.Join(root, "fox.png")); !os.IsNotExist(err) {
			t.Errorf("an unconfirmed image was saved: %v", err)
		}
	})
	t.Run("existing file", func(t *testing.T) {
		t.Parallel()
		// Yes to the save, no to replacing the file.
		answer := func(q string) *mcp.ElicitResult {
			if strings.Contains(q, "already exists") {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"save": false}}
			}
			return yes(q)
		}
		cs, root, asked := imageServer(t, imageStub(pngA), answer)
		old := filepath.Join(root, "fox.png")
		if err := os.WriteFile(old, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		res := call(t, cs, "image", map[string]any{"prompt": "a fox", "save_to": "fox.png"})
		if res.IsError || !strings.Contains(allText(res), "the user said no") {
			t.Fatalf("kept: %v %q", res.IsError, allText(res))
		}
		if got, _ := os.ReadFile(old); string(got) != "old" {
			t.Errorf("the existing file was replaced: %q", got)
		}
		if len(asked()) != 2 {
			t.Errorf("asked %q, want the save and the replacement", asked())
		}
		// Both yeses replace it.
		cs, root, _ = imageServer(t, imageStub(pngA), yes)
		old = filepath.Join(root, "fox.png")
		if err := os.WriteFile(old, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		res = call(t, cs, "image", map[string]any{"prompt": "a fox", "save_to": "fox.png"})
		if got, _ := os.ReadFile(old); res.IsError || !bytes.Equal(got, pngA) {
			t.Errorf("not replaced after two yeses: %q %q", got, allText(res))
		}
	})
}

// TestImageSaveThroughInputRequests follows a 2026-07-28 client that runs
// the multi-round-trip flow itself: the call returns an input request
// asking to save, with nothing written; the answer's call returns the
// second question, to replace the existing file; only the answer to that
// one writes the image, and brings the result. A no to the replacement
// keeps the old file.
func TestImageSaveThroughInputRequests(t *testing.T) {
	t.Parallel()
	for _, replace := range []bool{true, false} {
		cs, root := imageServerWith(t, imageStub(pngA), &mcp.ClientOptions{
			ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				return nil, errors.New("not asked this way")
			},
			MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}, "2026-07-28")
		old := filepath.Join(root, "fox.png")
		if err := os.WriteFile(old, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		ctx := testCtx(t)
		args := map[string]any{"prompt": "a fox", "save_to": "fox.png"}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "image", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		q, _ := res.InputRequests[saveInputID].(*mcp.ElicitParams)
		if !res.NeedsInput() || res.RequestState == "" || q == nil || !strings.Contains(q.Message, "Save the image") ||
			!strings.Contains(q.Message, "fox.png") {
			t.Fatalf("first result %+v asks no save", res)
		}
		if got, _ := os.ReadFile(old); string(got) != "old" {
			t.Fatalf("written before the yes: %q", got)
		}
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "image", Arguments: args, RequestState: res.RequestState,
			InputResponses: mcp.InputResponseMap{saveInputID: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"save": true}}}})
		if err != nil {
			t.Fatal(err)
		}
		q, _ = res.InputRequests[saveInputID].(*mcp.ElicitParams)
		if !res.NeedsInput() || q == nil || !strings.Contains(q.Message, "already exists") {
			t.Fatalf("second result %+v does not ask to replace the file", res)
		}
		if got, _ := os.ReadFile(old); string(got) != "old" {
			t.Fatalf("replaced before the second yes: %q", got)
		}
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "image", Arguments: args, RequestState: res.RequestState,
			InputResponses: mcp.InputResponseMap{saveInputID: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"save": replace}}}})
		if err != nil || res.NeedsInput() || res.IsError || len(imagesOf(res)) != 1 {
			t.Fatalf("final result %+v %v", res, err)
		}
		got, _ := os.ReadFile(old)
		if replace && (!bytes.Equal(got, pngA) || fmt.Sprint(res.Meta["saved"]) != "[fox.png]") {
			t.Errorf("after two yeses: file %q, _meta %v", got, res.Meta)
		}
		if !replace && (string(got) != "old" || !strings.Contains(allText(res), "the user said no")) {
			t.Errorf("after a no to the replacement: file %q, text %q", got, allText(res))
		}
	}
}

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// The tests here run the image tool in the server with the API backend on
// the fake Gemini API's image models, and on the one-shot CLI backend.

// imagesIn are the image items of res.
func imagesIn(res *mcp.CallToolResult) []*mcp.ImageContent {
	var out []*mcp.ImageContent
	for _, c := range res.Content {
		if im, ok := c.(*mcp.ImageContent); ok {
			out = append(out, im)
		}
	}
	return out
}

func imageEnv(t *testing.T) *hostEnv {
	h := newHostEnv(t, map[string]any{})
	h.api.SetModels(append(fakeapi.DefaultModels(), fakeapi.ImageModels()...))
	return h
}

func TestImageGenerateAndEdit(t *testing.T) {
	h := imageEnv(t)
	cs := h.stdio(t, nil, "")

	// Generate: the newest stable image model, the aspect ratio and size
	// sent, the picture back as image content.
	res, err := callTool(cs, "image", map[string]any{"prompt": "a red fox", "aspect_ratio": "16:9", "size": "2K"})
	if err != nil || res.IsError {
		t.Fatalf("image: %v %s", err, resultText(res))
	}
	if got := resultText(res); !strings.HasPrefix(got, fakeapi.ImageText("a red fox", nil)+"\n\n[image 1: image/png, ") {
		t.Errorf("text %q", got)
	}
	if ims := imagesIn(res); len(ims) != 1 || ims[0].MIMEType != "image/png" || !bytes.Equal(ims[0].Data, fakeapi.GenImage) {
		t.Errorf("images %+v", ims)
	}
	if res.Meta["model"] != "gemini-2.5-flash-image" || res.Meta["images"] != float64(1) {
		t.Errorf("_meta %v", res.Meta)
	}
	turn := lastTurn(t, h.api)
	if ar, size := turn.ImageConfig(); turn.Model != "gemini-2.5-flash-image" || !turn.WantsImages() || ar != "16:9" || size != "2K" {
		t.Errorf("the request: model %s, images %v, imageConfig %s %s", turn.Model, turn.WantsImages(), ar, size)
	}

	// Edit: an input image from files reaches the model, which echoes it.
	in := append(append([]byte(nil), fakeapi.GenImage...), "edit-me"...)
	if err := os.WriteFile(filepath.Join(h.dir, "in.png"), in, 0o644); err != nil {
		t.Fatal(err)
	}
	res, err = callTool(cs, "image", map[string]any{"prompt": "make it blue", "files": []any{"in.png"}, "model": "gemini-3-pro-image-preview"})
	if err != nil || res.IsError {
		t.Fatalf("image edit: %v %s", err, resultText(res))
	}
	if got, want := resultText(res), fakeapi.ImageText("", []fakeapi.InlineImage{{MIMEType: "image/png", Data: in}}); !strings.HasPrefix(got, want) {
		t.Errorf("edit text %q, want %q", got, want)
	}
	if ims := imagesIn(res); len(ims) != 1 || !bytes.Equal(ims[0].Data, in) {
		t.Errorf("edited images %d", len(ims))
	}
	if ins := lastTurn(t, h.api).InputImages(); len(ins) != 1 || !bytes.Equal(ins[0].Data, in) {
		t.Errorf("the request's input images: %d", len(ins))
	}
	if res.Meta["model"] != "gemini-3-pro-image-preview" {
		t.Errorf("edit _meta.model %v", res.Meta["model"])
	}
}

func TestImageRefused(t *testing.T) {
	h := imageEnv(t)
	cs := h.stdio(t, nil, "")
	callErr(t, cs, "image", map[string]any{"prompt": "something [[finish:IMAGE_SAFETY]]"}, "safety")
	callErr(t, cs, "image", map[string]any{"prompt": "a fox", "model": "gemini-2.5-flash"},
		`image: model "gemini-2.5-flash" does not make images`, "gemini-2.5-flash-image")
	callErr(t, cs, "image", map[string]any{"prompt": "a fox", "save_to": "../fox.png"}, "outside the project root")
	n := len(h.api.Requests())
	callErr(t, cs, "image", map[string]any{"prompt": "a fox", "size": "8K"}, "size must be one of 1K, 2K, 4K")
	if len(h.api.Requests()) != n {
		t.Error("a refused argument reached the API")
	}

	e := newEnv(t)
	cli := connect(t, e.command())
	callErr(t, cli, "image", map[string]any{"prompt": "a fox"}, "image: the oneshot backend cannot do this", "--backend api")
}

// TestImageSaveConfirmed: the pictures are saved after the user's yes,
// and an existing file replaced after a second one, under both protocol
// generations: elicitation/create up to 2025-11-25, input requests of
// the result from 2026-07-28 on (the go-sdk client runs that flow by
// itself), over stdio and stateless HTTP.
func TestImageSaveConfirmed(t *testing.T) {
	for _, tp := range []string{"stdio/2025-11-25", "stdio/2026-07-28", "stateless/2026-07-28"} {
		t.Run(tp, func(t *testing.T) {
			transport, protocol, _ := strings.Cut(tp, "/")
			h := imageEnv(t)
			var mu sync.Mutex
			var asked []string
			opts := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, req.Params.Message)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"save": true}}, nil
			}}
			var cs *mcp.ClientSession
			if transport == "stdio" {
				cs = h.stdio(t, opts, protocol)
			} else {
				cs = h.http(t, opts, protocol, "--stateless")
			}
			if err := os.WriteFile(filepath.Join(h.dir, "fox-2.png"), []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := callTool(cs, "image", map[string]any{"prompt": "two foxes [[images:2]]", "save_to": "fox"})
			if err != nil || res.IsError {
				t.Fatalf("image: %v %s", err, resultText(res))
			}
			for _, name := range []string{"fox-1.png", "fox-2.png"} {
				if got, err := os.ReadFile(filepath.Join(h.dir, name)); err != nil || !bytes.Equal(got, fakeapi.GenImage) {
					t.Errorf("%s: %v", name, err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			// One question for both, one to replace fox-2.png.
			if len(asked) != 2 || !strings.Contains(asked[0], "fox-1.png, fox-2.png") || !strings.Contains(asked[1], "fox-2.png already exists") || len(imagesIn(res)) != 2 {
				t.Errorf("asked %q; %d images", asked, len(imagesIn(res)))
			}
		})
	}
}

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// TestImageManySaved: an answer of 16 pictures (the most one answer returns) with save_to is saved
// after one question for them all and one to replace the files that
// exist, under both protocol generations; a client that asks its user
// through the result (2026-07-28) answers only so many rounds in one call
// (the go-sdk client 10), which two questions an image ran past, failing
// the call with 9 of them saved and the others lost.
func TestImageManySaved(t *testing.T) {
	for _, protocol := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			h := imageEnv(t)
			var mu sync.Mutex
			var asked []string
			opts := &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				mu.Lock()
				defer mu.Unlock()
				asked = append(asked, req.Params.Message)
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"save": true}}, nil
			}}
			cs := h.stdio(t, opts, protocol)
			for _, name := range []string{"many-3.png", "many-14.png"} {
				if err := os.WriteFile(filepath.Join(h.dir, name), []byte("old"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			res, err := callTool(cs, "image", map[string]any{"prompt": "a flock [[images:16]]", "save_to": "many"})
			if err != nil || res.IsError {
				t.Fatalf("image: %v %s", err, resultText(res))
			}
			if saved, _ := res.Meta["saved"].([]any); len(saved) != 16 || res.Meta["notSaved"] != nil {
				t.Errorf("saved %d of 16: %v", len(saved), res.Meta["notSaved"])
			}
			for i := 1; i <= 16; i++ {
				if got, err := os.ReadFile(filepath.Join(h.dir, fmt.Sprintf("many-%d.png", i))); err != nil || !bytes.Equal(got, fakeapi.GenImage) {
					t.Errorf("many-%d.png: %v", i, err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(asked) != 2 || !strings.Contains(asked[0], "Save the 16 images") || !strings.Contains(asked[0], "and 6 more") ||
				!strings.Contains(asked[1], "many-3.png, many-14.png already exist") {
				t.Errorf("asked %d questions, want 2: %q", len(asked), asked)
			}
		})
	}
}

// TestImageLongSaveToRefused: a save_to whose file name or path is longer
// than a file system takes is refused before Gemini runs, quoted
// clipped, rather than the pictures made and paid for, then not saved
// with the system's error quoting the whole path.
func TestImageLongSaveToRefused(t *testing.T) {
	t.Parallel()
	h := imageEnv(t)
	cs := h.stdio(t, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"save": true}}, nil
	}}, "")
	for _, p := range []string{strings.Repeat("n", 300) + ".png", strings.Repeat("d/", 3000) + "x.png", strings.Repeat("x", 200000)} {
		res, err := callTool(cs, "image", map[string]any{"prompt": "a fox [[images:2]]", "save_to": p})
		if err != nil || !res.IsError || !strings.Contains(resultText(res), "a file system takes") || len(resultText(res)) > 1000 {
			t.Errorf("save_to of %d bytes: %v %.300s", len(p), err, resultText(res))
		}
	}
	if n := len(h.api.Requests()); n != 0 {
		t.Errorf("Gemini was asked %d times", n)
	}
}

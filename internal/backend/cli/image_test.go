package cli

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
)

// A turn that asks for images is refused before any Gemini CLI is looked
// for: the CLI has no image models.
func TestRunnerRefusesImages(t *testing.T) {
	t.Parallel()
	r := NewRunner(geminicli.Options{Gemini: filepath.Join(t.TempDir(), "gemini")}, nil)
	_, err := r.Run(context.Background(), backend.Turn{Prompt: "a fox", Builtins: backend.Builtins{Image: &backend.ImageRequest{}}})
	var be *backend.Error
	if !errors.As(err, &be) || be.Kind != backend.KindInput || !errors.Is(err, backend.ErrNoBuiltins) ||
		!strings.Contains(be.Reason, "image: the oneshot backend cannot do this") || !strings.Contains(be.Reason, "--backend api") {
		t.Fatalf("error %v, want the refusal of images", err)
	}
}

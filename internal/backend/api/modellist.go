package api

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/validate"
)

// Reading the API's model list, within bounds (see models for its cache).

// Bounds on the model list read: the API lists a few dozen models, 50 to
// a page; an endpoint that lists more, or pages on for ever, is read up to
// these (and the names no turn could ask for are left out, see refresh).
const (
	maxListedModels = 1000
	maxModelPages   = 40
)

// listModels reads the model list, page by page, up to maxListedModels
// models in at most maxModelPages pages.
func (b *Backend) listModels(ctx context.Context) (out []*genai.Model, err error) {
	defer func() {
		// The SDK panics on some malformed lists (v1.77.0: "models": null);
		// a proxy's odd answer must not bring the server down.
		if v := recover(); v != nil {
			out, err = nil, fmt.Errorf("the model list could not be read: %v", v)
		}
	}()
	page, err := b.client.Models.List(ctx, &genai.ListModelsConfig{})
	for n := 1; ; n++ {
		if err != nil {
			return nil, err
		}
		out = append(out, page.Items...)
		if len(out) >= maxListedModels || n == maxModelPages || page.NextPageToken == "" {
			break
		}
		page, err = page.Next(ctx)
		if errors.Is(err, genai.ErrPageDone) {
			break
		}
	}
	if len(out) > maxListedModels || page.NextPageToken != "" {
		b.log.Warn("gemini api: the model list goes on past this server's bound; the rest is not read",
			"models", min(len(out), maxListedModels), "pages", maxModelPages)
		out = out[:min(len(out), maxListedModels)]
	}
	return out, nil
}

// listable says whether a name of the model list is kept: each of its
// segments ("models/…", "publishers/google/models/…") a model name a turn
// could give (validate.Model). Others, with spaces, control characters or
// path steps, no turn could ask for, and none is made a default, put in an
// error message or a metric label.
func listable(name string) bool {
	if name == "" || len(name) > 512 {
		return false
	}
	for seg := range strings.SplitSeq(name, "/") {
		if validate.Model(seg) != nil {
			return false
		}
	}
	return true
}

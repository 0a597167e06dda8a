package app

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// ModelsURI is the resource that lists the models the API backend's
// credentials can use, with their context windows and what each supports,
// as doctor prints them.
const ModelsURI = "gemini-mcp://models"

// modelsOf returns the model list of the API backend counter is (nil for
// another backend), as a JSON value; it is nil in a build without the API
// backend.
var modelsOf func(counter backend.TokenCounter) func(ctx context.Context) (any, error)

// addModelsResource offers the API backend's model list as a JSON
// resource, when the backend is the API's.
func addModelsResource(srv *mcp.Server, counter backend.TokenCounter) {
	if modelsOf == nil || counter == nil {
		return
	}
	list := modelsOf(counter)
	if list == nil {
		return
	}
	srv.AddResource(&mcp.Resource{
		URI:   ModelsURI,
		Name:  "models",
		Title: "Gemini models this server can use",
		Description: "The models the Gemini API lists for this server's credentials that answer prompts: name, aliases (pro, flash, flash-lite), " +
			"the default, context window (inputTokenLimit) and which options each takes (thinking by level or budget, Google Search, context caching).",
		MIMEType: "application/json",
	}, func(ctx context.Context, _ *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		models, err := list(ctx)
		if err != nil {
			return nil, err
		}
		data, err := json.MarshalIndent(map[string]any{"models": models}, "", "  ")
		if err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: ModelsURI, MIMEType: "application/json", Text: string(data)}}}, nil
	})
}

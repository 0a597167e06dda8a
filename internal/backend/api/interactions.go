package api

import (
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/api/interact"
)

// Interactions returns a client of the Gemini Interactions API (background
// agent and model interactions, see package interact) with the Backend's
// API key, endpoint and HTTP client, whose answers pass the same guard as
// the turns' (no answer past maxBodyBytes is read). It takes a Gemini API
// key: with Vertex AI credentials it is a KindAuth error that says so
// (Vertex AI serves interactions at other addresses, not spoken here).
func (b *Backend) Interactions() (*interact.Client, error) {
	if b.creds.Vertex || b.creds.Key == "" {
		return nil, newError(backend.KindAuth, nil,
			"the Interactions API (background jobs, Deep Research) takes a Gemini API key (GEMINI_API_KEY); the server uses %s", b.creds.What)
	}
	cc := b.client.ClientConfig()
	c, err := interact.New(interact.Config{APIKey: b.creds.Key, BaseURL: cc.HTTPOptions.BaseURL, HTTPClient: cc.HTTPClient})
	if err != nil {
		return nil, newError(backend.KindConfig, err, "%v", err)
	}
	return c, nil
}

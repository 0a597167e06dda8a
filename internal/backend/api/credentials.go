package api

import (
	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/apicreds"
)

// geminiEndpoint is the Gemini API's own address, set explicitly so that
// the SDK never picks an endpoint from the process environment behind
// Options.Getenv's back.
const geminiEndpoint = "https://generativelanguage.googleapis.com/"

// CredentialsHelp says which credentials the API backend accepts; errors
// about credentials end with it.
const CredentialsHelp = apicreds.CredentialsHelp

// Credentials says, without any network request, whether the environment
// read through getenv holds credentials the API backend can use, and which
// (or, when not, what is missing).
func Credentials(getenv func(string) string) (ok bool, what string) {
	return apicreds.Credentials(getenv)
}

// clientConfig is the SDK's configuration for c, with baseURL (when not
// "") overriding the endpoint.
func clientConfig(c apicreds.Creds, baseURL string) *genai.ClientConfig {
	if baseURL == "" {
		baseURL = c.BaseURL
	}
	cc := &genai.ClientConfig{}
	if c.Vertex {
		cc.Backend = genai.BackendVertexAI
		cc.APIKey, cc.Project, cc.Location = c.Key, c.Project, c.Location
	} else {
		cc.Backend = genai.BackendGeminiAPI
		cc.APIKey = c.Key
		if baseURL == "" {
			baseURL = geminiEndpoint
		}
	}
	cc.HTTPOptions.BaseURL = baseURL
	return cc
}

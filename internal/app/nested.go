package app

import (
	"context"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
)

// NestedEnv marks the Gemini CLI processes this server starts. Registered
// in the Gemini CLI, the server is also an MCP server of its own CLI
// children, which read the same settings and start it again: without a
// guard that copy offers chat to the model, and a chat can call itself.
// The CLI passes its environment on to stdio MCP servers after removing
// names that look secret (and, in GitHub Actions, all but a few), but it
// always keeps the GEMINI_CLI_ ones: hence the prefix.
const NestedEnv = "GEMINI_CLI_UNDER_GEMINI_MCP_SERVER"

// nestedResourceURI is the one thing a nested copy serves.
const nestedResourceURI = "gemini-mcp-server://nested"

const nestedText = "This gemini-mcp-server was started by a Gemini CLI process that another " +
	"gemini-mcp-server runs, so it serves no tools: a Gemini chat could otherwise call itself. " +
	"Start the outer server with --allow-nested (GEMINI_MCP_ALLOW_NESTED=true) to serve them anyway."

// isNested reports whether this process should serve no tools.
func isNested(cfg *config.Config, getenv func(string) string) bool {
	return getenv(NestedEnv) != "" && !cfg.AllowNested && cfg.HTTP == ""
}

// serveNested serves, on stdio, an MCP server with no tools and one
// resource that says why. A server with nothing at all would make the
// Gemini CLI report a discovery error on every call; one that exits would
// be reported as a failed connection. It starts no Gemini CLI, so the
// chain ends here.
func serveNested(ctx context.Context, cfg *config.Config, version string, sio IO, log *slog.Logger) error {
	srv := mcp.NewServer(&mcp.Implementation{Name: "gemini-mcp-server", Version: version}, nil)
	srv.AddResource(&mcp.Resource{URI: nestedResourceURI, Name: "nested", MIMEType: "text/plain", Description: nestedText},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: nestedResourceURI, MIMEType: "text/plain", Text: nestedText}}}, nil
		})
	log.Info("started by this server's own Gemini CLI: serving no tools (--allow-nested serves them)")
	life, endLife := context.WithCancel(ctx)
	defer endLife()
	return serveOnStdio(life, endLife, srv, sio, cfg.MaxPromptBytes, log)
}

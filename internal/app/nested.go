package app

import (
	"context"
	"log/slog"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/server"
)

// NestedEnv marks the Gemini CLI processes this server starts, and the
// stdio servers of its MCP host, with their depth: 1 under a server that
// has no mark itself, one more under each marked one. Registered in the
// Gemini CLI, the server is also an MCP server of its own CLI children,
// which read the same settings and start it again: without a guard that
// copy offers chat to the model, and a chat can call itself. Named in its
// own --mcp-config (through a wrapper the configuration check cannot see
// through), it would start itself without end. The CLI passes its
// environment on to stdio MCP servers after removing names that look
// secret (and, in GitHub Actions, all but a few), but it always keeps the
// GEMINI_CLI_ ones: hence the prefix.
const NestedEnv = "GEMINI_CLI_UNDER_GEMINI_MCP_SERVER"

// maxNestDepth is the depth at which a copy serves no tools whatever
// --allow-nested says, and starts no MCP host: --allow-nested allows one
// level, and any chain of copies ends at the second.
const maxNestDepth = 2

// nestDepth is this process's depth under other copies of the server: 0
// without the mark; a mark that is not a number counts as 1.
func nestDepth(getenv func(string) string) int {
	v := getenv(NestedEnv)
	if v == "" {
		return 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 1 {
		return n
	}
	return 1
}

// childNestEnv is the mark of the processes this one starts.
func childNestEnv(getenv func(string) string) string {
	return NestedEnv + "=" + strconv.Itoa(nestDepth(getenv)+1)
}

// nestedResourceURI is the one thing a nested copy serves.
const nestedResourceURI = "gemini-mcp-server://nested"

const nestedText = "This gemini-mcp-server was started by another gemini-mcp-server (by a Gemini CLI " +
	"process it runs, or by its MCP host), so it serves no tools: a Gemini chat could otherwise call itself. " +
	"Start it with --allow-nested (GEMINI_MCP_ALLOW_NESTED=true) to serve them anyway, one level deep."

// isNested reports whether this process should serve no tools.
func isNested(cfg *config.Config, getenv func(string) string) bool {
	d := nestDepth(getenv)
	return cfg.HTTP.Addr == "" && (d > 0 && !cfg.CLI.AllowNested || d >= maxNestDepth)
}

// serveNested serves, on stdio, an MCP server with no tools and one
// resource that says why. A server with nothing at all would make the
// Gemini CLI report a discovery error on every call; one that exits would
// be reported as a failed connection. It starts no Gemini CLI, so the
// chain ends here.
func serveNested(ctx context.Context, cfg *config.Config, version string, sio IO, env Env, log *slog.Logger) error {
	srv := mcp.NewServer(&mcp.Implementation{Name: "gemini-mcp-server", Version: version}, nil)
	srv.AddResource(&mcp.Resource{URI: nestedResourceURI, Name: "nested", MIMEType: "text/plain", Description: nestedText},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: nestedResourceURI, MIMEType: "text/plain", Text: nestedText}}}, nil
		})
	if d := nestDepth(env.Getenv); d >= maxNestDepth {
		log.Info("started by another gemini-mcp-server, itself started by one: serving no tools, whatever --allow-nested says", "depth", d)
	} else {
		log.Info("started by another gemini-mcp-server (its Gemini CLI or its MCP host): serving no tools (--allow-nested serves them)")
	}
	life, endLife := context.WithCancel(ctx)
	defer endLife()
	return server.ServeStdio(life, endLife, srv, server.StdioOptions{In: sio.Stdin, Out: sio.Stdout, MaxPromptBytes: cfg.Tools.MaxPromptBytes, Log: log})
}

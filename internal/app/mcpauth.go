package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/buildinfo"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/mcphost"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/proc"
)

// mcpAuth is `gemini-mcp-server mcp auth NAME`: it connects to the remote
// server NAME of --mcp-config; when the server asks for a sign-in it
// prints the authorization URL (and runs $BROWSER on it when set),
// waits for the browser to come back to a loopback callback, keeps the
// tokens where the server finds them, and lists the server's tools.
func mcpAuth(ctx context.Context, cfg *config.Config, env Env, name string, out, errOut io.Writer, log *slog.Logger) int {
	fail := func(code int, format string, args ...any) int {
		fmt.Fprintf(errOut, "gemini-mcp-server mcp auth: "+format+"\n", args...)
		return code
	}
	if cfg.API.MCPConfig == "" {
		return fail(2, "give --mcp-config FILE (or GEMINI_MCP_CONFIG), the configuration that names the server")
	}
	mc, err := loadMCPConfig(cfg, env, log)
	if err != nil {
		return fail(1, "%v", err)
	}
	var names []string
	var one *mcphost.ServerConfig
	for i := range mc.Servers {
		names = append(names, mc.Servers[i].Name)
		if mc.Servers[i].Name == name {
			one = &mc.Servers[i]
		}
	}
	switch {
	case one == nil:
		return fail(2, "no server %q in %s (it has: %s)", name, cfg.API.MCPConfig, strings.Join(names, ", "))
	case one.Endpoint() == "":
		return fail(2, "%q is a stdio server: only remote (url, httpUrl) servers sign in", name)
	}
	tokens, closeTokens, err := tokenStore(cfg)
	if err != nil {
		return fail(1, "%v", err)
	}
	defer closeTokens()
	browser := func(ctx context.Context, authURL string) error {
		fmt.Fprintf(out, "To sign in to %s, open this URL in a browser:\n\n  %s\n\nWaiting for the browser to come back (at most %s)…\n", name, authURL, mcphost.SignInTimeout)
		if b := strings.Fields(env.Getenv("BROWSER")); len(b) > 0 {
			// The browser may stay open after the sign-in: it is not
			// waited for, nor stopped when the sign-in ends.
			go func() {
				res, err := proc.Run(context.WithoutCancel(ctx), proc.Spec{Path: b[0], Args: append(b[1:], authURL), Timeout: mcphost.SignInTimeout})
				if err != nil {
					log.Warn("mcp auth: $BROWSER did not run; open the URL yourself", "err", err)
				} else if res.Exit != 0 {
					log.Warn("mcp auth: $BROWSER failed; open the URL yourself", "exit", res.Exit, "stderr", res.Stderr)
				}
			}()
		}
		return nil
	}
	host := mcphost.New(&mcphost.Config{Servers: []mcphost.ServerConfig{*one}}, mcphost.Options{
		Logger: log, Version: buildinfo.Get().Version, Tokens: tokens, Browser: browser, ClientMetadataURL: cfg.API.MCPClientMetadataURL,
		Backoff: func(int) time.Duration { return time.Hour },
	})
	defer host.Close()
	if err := host.WaitSettled(ctx); err != nil {
		return fail(1, "%v", err)
	}
	st := host.Status()[0]
	if st.State != mcphost.StateConnected {
		return fail(1, "%s: %s", name, st.Reason)
	}
	fmt.Fprintf(out, "Signed in to %s (%s): %d tools.\n", name, st.Target, len(st.Tools))
	return 0
}

package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/buildinfo"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/mcphost"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// MCPServersURI is the resource that shows the MCP host's servers, their
// state and tools, as `gemini-mcp-server mcp list` does.
const MCPServersURI = "gemini-mcp://mcp-servers"

// listTimeout is how long `mcp list` waits for a server whose timeout is
// unset: the CLI's MCP_LIST_DEFAULT_TIMEOUT_MSEC for `gemini mcp list`.
const listTimeout = 5 * time.Second

// startToolHost starts the MCP host on the servers of --mcp-config, for
// the API backend: it returns nil without a configuration. The host
// connects in the background, so the server's own start and initialize
// never wait for a downstream server; a bad configuration is an error.
// Its OAuth tokens are kept in store when that is Redis (serverTokens).
func startToolHost(cfg *config.Config, env Env, store session.Store, log *slog.Logger) (*mcphost.Host, error) {
	if cfg.API.MCPConfig == "" {
		return nil, nil
	}
	if d := nestDepth(env.Getenv); d >= maxNestDepth {
		return nil, fmt.Errorf("--mcp-config: this server was started by a gemini-mcp-server that another one started (%s=%d), "+
			"so it starts no MCP servers: a configuration that starts this server again would never end", NestedEnv, d)
	}
	mc, err := loadMCPConfig(cfg, env, log)
	if err != nil {
		return nil, err
	}
	tokens, err := serverTokens(cfg, store)
	if err != nil {
		return nil, err
	}
	log.Info("MCP host: connecting to the configured servers", "config", cfg.API.MCPConfig, "servers", len(mc.Servers))
	return mcphost.New(mc, mcphost.Options{Logger: log, Version: buildinfo.Get().Version, ChildEnv: []string{childNestEnv(env.Getenv)}, Tokens: tokens}), nil
}

// loadMCPConfig reads --mcp-config, refusing a stdio server that is this
// executable, and logs its warnings.
func loadMCPConfig(cfg *config.Config, env Env, log *slog.Logger) (*mcphost.Config, error) {
	mc, err := mcphost.LoadConfig(cfg.API.MCPConfig, env.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("--mcp-config: %w", err)
	}
	if self, err := os.Executable(); err == nil {
		if err := mcphost.RefuseSelf(mc, self); err != nil {
			return nil, fmt.Errorf("--mcp-config %s: %w", cfg.API.MCPConfig, err)
		}
	}
	for _, w := range mc.Warnings {
		log.Warn(w)
	}
	return mc, nil
}

// toolHostFor is host as the API backend takes it: a nil interface, not
// an interface holding a nil pointer, when there is none.
func toolHostFor(host *mcphost.Host) backend.ToolHost {
	if host == nil {
		return nil
	}
	return host
}

// addMCPServersResource offers the MCP host's status as a JSON resource,
// when there is a host.
func addMCPServersResource(srv *mcp.Server, host *mcphost.Host) {
	if host == nil {
		return
	}
	srv.AddResource(&mcp.Resource{
		URI:         MCPServersURI,
		Name:        "mcp-servers",
		Title:       "MCP servers whose tools Gemini may call",
		Description: "The servers of --mcp-config: state (connected, connecting, failed with the reason, disconnected) and the tools declared to Gemini, as `gemini-mcp-server mcp list` prints them.",
		MIMEType:    "application/json",
	}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		data, err := json.MarshalIndent(map[string]any{"servers": host.Status()}, "", "  ")
		if err != nil {
			return nil, err
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: MCPServersURI, MIMEType: "application/json", Text: string(data)}}}, nil
	})
}

// mcpList is `gemini-mcp-server mcp list`: it connects to every server of
// --mcp-config as the server would, waits until each has connected or
// failed (within its timeout, or 5 s when unset, as `gemini mcp list`),
// and prints them with their tools.
func mcpList(ctx context.Context, cfg *config.Config, env Env, out io.Writer, log *slog.Logger) int {
	if cfg.API.MCPConfig == "" {
		fmt.Fprintln(out, "No MCP servers configured: give --mcp-config FILE (or GEMINI_MCP_CONFIG), a JSON file with an mcpServers object.")
		return 0
	}
	mc, err := loadMCPConfig(cfg, env, log)
	if err != nil {
		log.Error("mcp list", "err", err)
		return 1
	}
	var longest time.Duration
	for i := range mc.Servers {
		if mc.Servers[i].Timeout == 0 {
			mc.Servers[i].Timeout = listTimeout
		}
		longest = max(longest, mc.Servers[i].Timeout)
	}
	tokens, closeTokens, err := tokenStore(cfg)
	if err != nil {
		log.Error("mcp list", "err", err)
		return 1
	}
	defer closeTokens()
	// A listing tries each server once: the retry would come after the
	// host is closed.
	host := mcphost.New(mc, mcphost.Options{Logger: log, Version: buildinfo.Get().Version, Backoff: func(int) time.Duration { return time.Hour },
		ChildEnv: []string{childNestEnv(env.Getenv)}, Tokens: tokens})
	wctx, cancel := context.WithTimeout(ctx, longest+time.Second)
	err = host.WaitSettled(wctx)
	cancel()
	status := host.Status()
	host.Close()
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		log.Error("mcp list", "err", err)
		return 1
	}
	if err := mcphost.WriteList(out, status); err != nil {
		return 1
	}
	return 0
}

package app

import (
	"log/slog"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/acp"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/cli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// newBackend builds the backend cfg names, limited to --max-concurrent
// turns at once. It is the one place that decides how turns run: which
// backend, what the warm one falls back to, and the limits (per-call
// timeout, kill grace) every backend applies.
func newBackend(cfg *config.Config, store *session.Store, log *slog.Logger) (backend.Backend, error) {
	_ = store
	oneShotOpts := cliOptions(cfg)
	oneShot := cli.NewRunner(oneShotOpts, log)
	var b backend.Backend = oneShot
	if cfg.Backend == "warm" {
		warm := acp.WarmOptions{Processes: cfg.WarmProcesses, MaxPrompts: cfg.WarmMaxPrompts, MaxRSS: int64(cfg.WarmMaxRSSBytes), IdleTimeout: cfg.WarmIdleTimeout}
		b = acp.New(acp.ConfigFor(oneShotOpts, warm, oneShot), log)
	}
	return backend.Limit(b, cfg.MaxConcurrent), nil
}

// cliOptions is the configuration of the CLI backends.
func cliOptions(cfg *config.Config) cli.Options {
	return cli.Options{
		Gemini:                cfg.Gemini,
		Env:                   []string{NestedEnv + "=1"},
		DefaultModel:          cfg.Model,
		ApprovalMode:          cfg.ApprovalMode,
		Sandbox:               cfg.Sandbox,
		SkipTrust:             cfg.SkipTrust,
		IncludeDirectories:    cfg.IncludeDirectories,
		Extensions:            cfg.Extensions,
		AllowedMCPServerNames: cfg.AllowedMCPServerNames,
		Timeout:               cfg.Timeout,
		MaxOutputBytes:        cfg.MaxOutputBytes,
	}
}

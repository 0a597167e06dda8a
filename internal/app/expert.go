package app

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/expert"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/expertctx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/tools"
)

// addExpert registers the expert tools and their prompts on srv,
// reading files from the project root, and the rate limits when
// --rate-limits sets any. The project root must be an existing directory
// a call's cwd may be (within --allowed-roots where they apply), checked
// now so that a bad root stops the server at start rather than failing
// every call. counter, when not nil, counts the files' tokens.
func addExpert(srv *mcp.Server, cfg *config.Config, deps *tools.Deps, counter backend.TokenCounter, log *slog.Logger) error {
	root := cfg.ProjectRoot
	if root == "" {
		root = deps.DefaultCwd
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return fmt.Errorf("--project-root: %w", err)
	}
	if root, err = deps.ResolveDir(abs); err != nil {
		return fmt.Errorf("--project-root %s cannot be used: %w (set --project-root, PROJECT_ROOT or --allowed-roots)", abs, err)
	}
	// The server's own state is never file context, even when it lies
	// inside the project root.
	var forbidden []string
	if dir, err := stateDir(cfg); err == nil {
		forbidden = append(forbidden, absOr(dir))
	}
	if p, ok := strings.CutPrefix(cfg.Store, "sqlite:"); ok && p != "" {
		forbidden = append(forbidden, absOr(p))
	}
	var count func(context.Context, string) (int, error)
	if counter != nil {
		count = counter.CountTokens
	}
	fc := &expertctx.Context{Root: root, Forbidden: forbidden, Count: count, Options: filectx.Options{
		MaxFileBytes: int64(cfg.MaxFileBytes), MaxFiles: cfg.MaxFiles, MaxTokens: cfg.MaxContextTokens,
		SendSecretFiles: cfg.SendSecretFiles,
	}}
	// One record of the files each thread was sent, for every tool.
	sent := &expert.MemorySent{}
	// chat and chat-reply read deps.Files when called, so it may be set
	// after they are registered.
	deps.Files = fc.ChatFiles(sent)
	expert.Register(srv, &expert.Deps{Turns: deps, ProjectRoot: root, Files: fc.Files, Changes: fc.Changes, Sent: sent,
		CallTimeout: cfg.ExpertTimeout, MaxArgBytes: cfg.MaxPromptBytes, Log: log})
	if cfg.RateLimits.Limits != nil {
		limiter := expert.NewLimiter(cfg.RateLimits.Limits, nil)
		if shared, ok := deps.Store.(expert.SharedBuckets); ok {
			// Replicas on one Redis count each client's calls together.
			limiter.Shared, limiter.Log = shared, log
		}
		srv.AddReceivingMiddleware(limiter.Middleware())
	}
	log.Info("expert tools", "projectRoot", root, "maxFiles", cfg.MaxFiles, "maxFileBytes", cfg.MaxFileBytes,
		"maxContextTokens", cfg.MaxContextTokens, "sendSecretFiles", cfg.SendSecretFiles, "tokens", fc.TokenCounting(), "rateLimits", cfg.RateLimits.String())
	return nil
}

func absOr(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

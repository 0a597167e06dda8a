package app

import (
	"fmt"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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
// every call.
func addExpert(srv *mcp.Server, cfg *config.Config, deps *tools.Deps, log *slog.Logger) error {
	root := cfg.Expert.ProjectRoot
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
	if p, ok := strings.CutPrefix(cfg.Store.URL, "sqlite:"); ok && p != "" {
		forbidden = append(forbidden, absOr(p))
	}
	fc := &expertctx.Context{Root: root, Forbidden: forbidden, Options: filectx.Options{
		MaxFileBytes: int64(cfg.Expert.MaxFileBytes), MaxFiles: cfg.Expert.MaxFiles, MaxTokens: cfg.Expert.MaxContextTokens,
		SendSecretFiles: cfg.Expert.SendSecretFiles,
	}}
	if tc := tokenCounterOf(deps.Backend); tc != nil {
		fc.Count = tc.CountTokens
	}
	// One record of the files each thread was sent, for every tool.
	sent := &expert.MemorySent{}
	// chat and chat-reply read deps.Files when called, so it may be set
	// after they are registered.
	deps.Files = fc.ChatFiles(sent)
	expert.Register(srv, &expert.Deps{Turns: deps, ProjectRoot: root, Files: fc.Files, Changes: fc.Changes, Sent: sent,
		CallTimeout: cfg.Expert.Timeout, MaxArgBytes: cfg.Tools.MaxPromptBytes, Log: log})
	if cfg.Tools.RateLimits.Limits != nil {
		limiter := expert.NewLimiter(cfg.Tools.RateLimits.Limits, nil)
		if shared, ok := deps.Store.(expert.SharedBuckets); ok {
			// Replicas on one Redis count each client's calls together.
			limiter.Shared, limiter.Log = shared, log
		}
		srv.AddReceivingMiddleware(limiter.Middleware())
	}
	log.Info("expert tools", "projectRoot", root, "maxFiles", cfg.Expert.MaxFiles, "maxFileBytes", cfg.Expert.MaxFileBytes,
		"maxContextTokens", cfg.Expert.MaxContextTokens, "sendSecretFiles", cfg.Expert.SendSecretFiles, "tokens", fc.TokenCounting(), "rateLimits", cfg.Tools.RateLimits.String())
	return nil
}

// tokenCounterOf finds, through b's wrappers, a backend that counts
// tokens; nil when it has none.
func tokenCounterOf(b backend.Backend) backend.TokenCounter {
	for b != nil {
		if tc, ok := b.(backend.TokenCounter); ok {
			return tc
		}
		u, ok := b.(interface{ Unwrap() backend.Backend })
		if !ok {
			return nil
		}
		b = u.Unwrap()
	}
	return nil
}

func absOr(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

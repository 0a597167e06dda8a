package app

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/expert"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/attach"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/ratelimit"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/server"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/tools"
)

// newServer builds the MCP server on deps: every tool of the
// server's registry (the chat tools and the expert tools with their
// prompts), all reading
// files from the project root, and the rate limits when --rate-limits
// sets any. Each tool family's dependencies are complete before it is
// registered. The project root must be an existing directory a call's
// cwd may be (within --allowed-roots where they apply), checked now so
// that a bad root stops the server at start rather than failing every
// call. The backend's token counter, when it has one, counts the files'
// tokens.
func newServer(version string, cfg *config.Config, deps *Deps, log *slog.Logger) (*mcp.Server, error) {
	conv, counter := deps.Conv, deps.Backend.Counter
	root := cfg.Expert.ProjectRoot
	if root == "" {
		root = deps.Cwd
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("--project-root: %w", err)
	}
	if root, err = conv.ResolveDir(abs); err != nil {
		return nil, fmt.Errorf("--project-root %s cannot be used: %w (set --project-root, PROJECT_ROOT or --allowed-roots)", abs, err)
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
	// One file context, with one record of the files each thread was
	// sent, for every tool.
	var count func(context.Context, string) (int, error)
	if counter != nil {
		count = counter.CountTokens
	}
	fc := &filectx.Service{Root: root, Forbidden: forbidden, Count: count, Options: filectx.Options{
		MaxFileBytes: int64(cfg.Expert.MaxFileBytes), MaxFiles: cfg.Expert.MaxFiles, MaxTokens: cfg.Expert.MaxContextTokens,
		SendSecretFiles: cfg.Expert.SendSecretFiles,
		// The API backend, the one that counts tokens, is the one that
		// sends images, PDFs, audio and video to Gemini.
		Media: counter != nil, MaxMediaBytes: int64(cfg.Expert.MaxMediaBytes),
	}, Sent: &filectx.MemorySent{}, GitAnyOwner: cfg.Expert.PrecommitAnyOwner}
	// The research tool reaches the API backend's Interactions API.
	var research func() (tools.Researcher, error)
	if researchOf != nil && counter != nil {
		research = researchOf(counter)
	}
	// file_search: the API backend's File Search stores, swept while the
	// server runs (see start).
	var index attach.Index
	if fileSearchOf != nil && counter != nil {
		fs, err := fileSearchOf(cfg, deps.Store, counter, forbidden, log)
		if err != nil {
			return nil, err
		}
		if fs != nil {
			index, deps.fileSearch = fs.index, fs
		}
	}
	// One index is bound by the call's own limit, which holds in a job
	// too: chat's --timeout, the expert tools' --expert-timeout.
	chatSearch := &attach.Service{Index: index, Limit: cfg.Turns.Timeout}
	chat := &tools.Deps{Conv: conv, MaxPromptBytes: cfg.Tools.MaxPromptBytes, Files: fc, ProjectRoot: root, Forbidden: forbidden, Jobs: deps.Jobs,
		Research: research, FileSearch: chatSearch}
	// precommit cuts the changes to fit the model's input, which the API
	// backend knows; the others get the Gemini models' own.
	var inputLimit func(context.Context) int
	if l, ok := counter.(interface{ InputLimit(context.Context) int }); ok {
		inputLimit = l.InputLimit
	}
	srv := server.New(version, server.Families{
		Chat: chat,
		// The expert tools run their turns through the same pipeline as
		// chat: the same sessions, confirmations and grants, and pages.
		Expert: &expert.Deps{Turns: conv, ProjectRoot: root, Files: fc,
			CallTimeout: cfg.Expert.Timeout, MaxArgBytes: cfg.Tools.MaxPromptBytes, InputLimit: inputLimit,
			FileSearch: &attach.Service{Index: index, Limit: cfg.Expert.Timeout}, Log: log},
		Serve: cfg.Tools.Served,
	}, log)
	if cfg.Tools.RateLimits.Limits != nil {
		limiter := ratelimit.NewLimiter(cfg.Tools.RateLimits.Limits, nil)
		if shared, ok := deps.Store.(ratelimit.SharedBuckets); ok {
			// Replicas on one Redis count each client's calls together.
			limiter.Shared, limiter.Log = shared, log
		}
		// The expert tools fail with JSON-RPC errors, the chat tools
		// with error results.
		srv.AddReceivingMiddleware(limiter.Middleware(server.RPCErrorTools()))
	}
	log.Info("tools served", "tools", cfg.Tools.Toolset, "served", strings.Join(cfg.Tools.Served, ","))
	log.Info("expert tools", "projectRoot", root, "maxFiles", cfg.Expert.MaxFiles, "maxFileBytes", cfg.Expert.MaxFileBytes,
		"maxContextTokens", cfg.Expert.MaxContextTokens, "sendSecretFiles", cfg.Expert.SendSecretFiles, "precommitAnyOwner", cfg.Expert.PrecommitAnyOwner, "tokens", fc.TokenCounting(), "rateLimits", cfg.Tools.RateLimits.String())
	return srv, nil
}

// researchOf returns how the research tool reaches the Interactions API
// of the API backend counter is (nil for the CLI backends, and in a
// build without the API backend).
var researchOf func(counter backend.TokenCounter) func() (tools.Researcher, error)

func absOr(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// fileSearch is the tools' File Search and its sweep.
type fileSearch struct {
	index   attach.Index
	sweeper interface {
		Sweep(ctx context.Context) (int, error)
	}
	ttl time.Duration
	log *slog.Logger
}

// fileSearchOf returns the File Search of the API backend counter is
// (nil for the CLI backends, and in a build without the API backend).
var fileSearchOf func(cfg *config.Config, store session.Store, counter backend.TokenCounter, forbidden []string, log *slog.Logger) (*fileSearch, error)

// sweep deletes the stores unused for the TTL every interval until ctx
// ends. A sweep that fails (the API unreachable) is logged and tried
// again at the next.
func (f *fileSearch) sweep(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		n, err := f.sweeper.Sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			f.log.Warn("file search: sweeping unused stores failed; trying again later", "deleted", n, "err", err, "retryIn", every)
		case n > 0:
			f.log.Info("file search: deleted stores unused for the TTL", "deleted", n, "ttl", f.ttl)
		}
	}
}

// sweepInterval is how often stores unused for ttl are looked for: half
// the TTL, within a minute and an hour.
func sweepInterval(ttl time.Duration) time.Duration {
	return min(max(ttl/2, time.Minute), time.Hour)
}

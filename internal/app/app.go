// Package app is the gemini-mcp-server command: flag handling, the stdio
// server's lifetime, and the doctor subcommand.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/buildinfo"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/metrics"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/redact"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/server"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/access"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/trace"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/validate"
)

// IO is what the command talks through.
type IO struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv and LookupEnv read the environment the server takes its
	// settings, credentials and nesting mark from (nil: the process's;
	// LookupEnv nil with Getenv set: a variable is set when not empty).
	Getenv    func(string) string
	LookupEnv func(string) (string, bool)
	// Hurry, when closed, ends at once the drain that the end of Run's
	// context started (HTTP): the calls in flight are cancelled and the
	// server stops, as at the end of --drain-timeout. The command closes
	// it at a second SIGINT or SIGTERM. nil: never.
	Hurry <-chan struct{}
}

// Env is the environment, as IO gives it, that every part of the server
// reads instead of the process's own.
type Env struct {
	Getenv    func(string) string
	LookupEnv func(string) (string, bool)
}

// env completes sio's environment.
func (sio IO) env() Env {
	switch {
	case sio.Getenv == nil:
		return Env{Getenv: os.Getenv, LookupEnv: os.LookupEnv}
	case sio.LookupEnv == nil:
		get := sio.Getenv
		return Env{Getenv: get, LookupEnv: func(k string) (string, bool) { v := get(k); return v, v != "" }}
	}
	return Env{Getenv: sio.Getenv, LookupEnv: sio.LookupEnv}
}

const usageHeader = `gemini-mcp-server: Google Gemini as MCP tools, through the Gemini CLI or the Gemini API.

Usage:
  gemini-mcp-server [flags]          serve MCP over stdio (what MCP clients run)
  gemini-mcp-server --http ADDR      serve MCP over HTTP: /mcp, /sse, /healthz
  gemini-mcp-server doctor [flags]   check the backend that would run, its auth and settings
  gemini-mcp-server mcp list [flags] the MCP servers of --mcp-config: state and tools
  gemini-mcp-server mcp auth NAME [flags]
                                     sign in to the remote MCP server NAME (OAuth)
  gemini-mcp-server healthcheck [--url URL]
                                     exit 0 when the HTTP server's /healthz answers ok
  gemini-mcp-server --version        print the version

Tools {arguments}:
  chat {prompt, model, systemPrompt, cwd, files, file_search,
    continuation_id, temperature, thinking_mode, include_thoughts,
    google_search, urls, code_execution, response_schema, background}
    starts a Gemini session
  chat-reply {prompt, sessionId, continuation_id, model, systemPrompt, cwd,
    files, file_search, temperature, thinking_mode, include_thoughts,
    google_search, urls, code_execution, background} continues one
  chat-page {answerId, page} the next page of an answer too long for one result
  sessions {limit, cursor, cwd} lists this client's sessions
  image {prompt, files, model, aspect_ratio, size, save_to} makes or edits
    pictures with Gemini's image models (--backend api)
  research {query, files, urls, agent, plan, continue_from,
    thinking_summaries, wait} Deep Research as a background job: a cited
    report (--backend api)
  job {jobId, wait, cancel} the progress and result of a background call
Expert tools send files under --project-root (or a git
repository's changes) to Gemini:
  thinkdeep {current_analysis, problem_context, focus_areas, files,
    continuation_id, temperature, thinking_mode, google_search,
    file_search, background}
  analyze {files, question, analysis_type, continuation_id, temperature,
    thinking_mode, code_execution, file_search, background}
  codereview {files, context, review_type, severity_filter, standards,
    continuation_id, temperature, thinking_mode, file_search}
  debug {error_description, error_context, files, runtime_info,
    previous_attempts, continuation_id, temperature, thinking_mode,
    google_search, code_execution, file_search, background}
  precommit {path, original_request, review_type, include_staged,
    include_unstaged, continuation_id, temperature, thinking_mode,
    file_search}
--tools serves only some of them (chat, sessions, expert or a tool's name;
chat-page and job come with chat and the expert tools), saving the client
model's context that each tool's definition takes.
--backend auto (the default) runs the Gemini CLI when a gemini executable is
found (npm install -g @google/gemini-cli), authenticated with a paid Gemini
API key (GEMINI_API_KEY), Vertex AI, or a Code Assist Standard/Enterprise
seat; else the Gemini API itself, when GEMINI_API_KEY, GOOGLE_API_KEY or
Vertex AI credentials are set. Free, Google AI Pro and Ultra accounts lost
Gemini CLI access on 2026-06-18. Logs go to stderr; stdout carries MCP only.

Flags (each also read from the environment variable in parentheses):
`

// Run runs the command with args (without the program name) and returns
// its exit code. Its version is internal/buildinfo's.
func Run(ctx context.Context, args []string, sio IO) int {
	build := buildinfo.Get()
	version := build.Version
	env := sio.env()
	sub, authServer := "", ""
	if len(args) > 0 {
		switch args[0] {
		case "doctor", "serve":
			sub, args = args[0], args[1:]
		case "mcp":
			switch {
			case len(args) >= 2 && args[1] == "list":
				sub, args = "mcp list", args[2:]
			case len(args) >= 3 && args[1] == "auth" && !strings.HasPrefix(args[2], "-"):
				sub, authServer, args = "mcp auth", args[2], args[3:]
			default:
				fmt.Fprintln(sio.Stderr, "gemini-mcp-server: the mcp subcommand has two commands: mcp list [flags], mcp auth NAME [flags]")
				return 2
			}
		case "healthcheck":
			return Healthcheck(ctx, args[1:], env.Getenv, sio.Stdout, sio.Stderr)
		case "version":
			fmt.Fprintln(sio.Stdout, "gemini-mcp-server", build)
			return 0
		case "help":
			args = []string{"--help"}
		}
	}
	// Help that was asked for goes to stdout and succeeds; mistakes go to
	// stderr with a pointer to the help.
	cfg, err := config.Parse("gemini-mcp-server", usageHeader, args, env.Getenv, sio.Stdout, configRules())
	if errors.Is(err, config.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(sio.Stderr, "gemini-mcp-server:", err)
		fmt.Fprintln(sio.Stderr, "Run 'gemini-mcp-server --help' for the flags.")
		return 2
	}
	if cfg.ShowVersion {
		fmt.Fprintln(sio.Stdout, "gemini-mcp-server", build)
		return 0
	}
	// The log masks every secret this process knows of: those of its
	// environment and the store's URL here, the MCP host's configuration
	// once it is read (mcphost.New adds them to the same redactor).
	red := redact.New(redact.EnvSecrets(os.Environ())...)
	red.Add(redact.URLSecrets(cfg.Store.URL)...)
	red.Add(cfg.HTTP.AuthClientSecret)
	log := slog.New(redact.Handler(slog.NewTextHandler(sio.Stderr, &slog.HandlerOptions{Level: cfg.LogLevel}), red))
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	if sub == "doctor" {
		return Doctor(ctx, cfg, version, sio.Stdout, env.Getenv)
	}
	if sub == "mcp list" {
		return mcpList(ctx, cfg, env, sio.Stdout, log)
	}
	if sub == "mcp auth" {
		return mcpAuth(ctx, cfg, env, authServer, sio.Stdout, sio.Stderr, log)
	}
	_, disable := enableMetrics(cfg)
	defer disable()
	serve := serveStdio
	if cfg.HTTP.Addr != "" {
		serve = serveHTTP
	}
	if isNested(cfg, env.Getenv) {
		serve = serveNested
	}
	if err := serve(ctx, cfg, version, sio, env, log); err != nil {
		log.Error("server stopped", "err", err)
		return 1
	}
	return 0
}

// configRules are the checks of the configuration that config leaves to
// the packages that know: a valid model name, the tools a rate limit may
// name (every tool the server's registry lists), the tools --tools serves.
func configRules() config.Rules {
	return config.Rules{Model: validate.Model, RateLimitTools: server.ToolNames(), Toolset: server.ParseToolset}
}

// Deps are what the server is built on: the turn pipeline every tool
// shares, and what the pipeline runs on, which the server holds itself.
type Deps struct {
	// Conv is the turn pipeline, complete.
	Conv *conversation.Service
	// Backend runs the turns; Store keeps the sessions. Both are the
	// server's to close.
	Backend *builtBackend
	Store   session.Store
	// Cwd is where calls without cwd run; AllowedRoots the directories
	// calls may run in (nil: any).
	Cwd          string
	AllowedRoots []string
	// Jobs keeps the background jobs, in Store (nil when the store keeps
	// none): the pipeline runs them, the job tool reads them.
	Jobs jobs.Store
	// fileSearch is the tools' File Search, once the server is built
	// (nil on a backend without it), which start sweeps.
	fileSearch *fileSearch
}

// NewDeps builds, from the configuration, the turn pipeline every tool
// shares, complete, and the backend and session store it runs on: every
// call's context ends with life (the server's lifetime; nil: none) and,
// when requests is set (over HTTP), with the HTTP request that carries it.
// The session store and the backend it opens are the caller's to close
// (Store.Close, Backend.Close).
func NewDeps(ctx context.Context, cfg *config.Config, env Env, log *slog.Logger, life context.Context, requests func(*mcp.CallToolRequest) context.Context) (d *Deps, err error) {
	store, where, err := openStore(ctx, cfg, true, storeHooks(log))
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			store.Close()
		}
	}()
	if metrics.Current() != nil {
		store = session.Observed(store, metrics.StoreOp)
	}
	log.Info("session store", "store", where, "ttl", cfg.Store.TTL, "maxTurns", cfg.Store.MaxTurns)
	cwd := cfg.Tools.Cwd
	if cwd == "" {
		if cwd, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("finding the working directory (set --cwd): %w", err)
		}
	}
	// Absolute, so that it compares with the allowed roots.
	if cwd, err = filepath.Abs(cwd); err != nil {
		return nil, fmt.Errorf("--cwd: %w", err)
	}
	// Over HTTP, clients are remote: by default they may only work under
	// the server's directory. On stdio the client is the local user, who
	// could run the CLI anywhere, so no roots apply unless set.
	roots := cfg.Tools.AllowedRoots
	if len(roots) == 0 && cfg.HTTP.Addr != "" {
		roots = []string{cwd}
	}
	var allowed []string
	if len(roots) > 0 {
		if allowed, err = access.ResolveRoots(roots); err != nil {
			return nil, err
		}
	}
	b, err := newBackend(cfg, env, store, log)
	if err != nil {
		return nil, err
	}
	jobStore := jobs.Of(store)
	if metrics.Current() != nil {
		jobStore = jobs.Observed(jobStore, metrics.StoreOp)
	}
	conv := conversation.New(conversation.Options{Backend: b.Backend, Store: store, MaxTurns: cfg.Store.MaxTurns, DefaultCwd: cwd, Log: log, ProgressInterval: cfg.Tools.ProgressInterval, MaxAnswerBytes: cfg.Tools.MaxAnswerBytes,
		AllowedRoots: allowed, Remote: cfg.HTTP.Addr != "", Authenticated: len(cfg.HTTP.Tokens) > 0 || cfg.HTTP.TokenFile != "" || len(cfg.HTTP.AuthIssuers) > 0,
		Stateless: cfg.HTTP.Stateless, ShareSessions: cfg.Tools.ShareSessions, SessionIDInText: cfg.Tools.SessionIDInText,
		Lifetime: life, RequestContext: requests, Jobs: jobStore, JobAfter: cfg.Tools.JobAfter})
	return &Deps{Conv: conv, Backend: b, Store: store, Cwd: cwd, AllowedRoots: allowed, Jobs: jobStore}, nil
}

// serving is what both transports serve: the MCP server with every tool,
// resource and limit, the turn pipeline and backend behind it, and a
// lifetime that every call's context ends with. The SDK waits for running
// handlers before a session ends, so the lifetime (ended by endLife, by a
// signal through start's ctx, or by stop) is what stops calls at shutdown.
type serving struct {
	srv     *mcp.Server
	deps    *Deps
	life    context.Context
	endLife func()
	// stop ends the lifetime, then the backend (its warm processes, its
	// MCP host) and the store.
	stop func()
}

// readyProbe is a session id no session has: reading its record is the
// readiness check's look at the store.
const readyProbe = "00000000-0000-4000-8000-000000000000"

// ready is the readiness check: the store answers a read, and the backend
// is usable.
func (s *serving) ready(ctx context.Context) error {
	if _, _, err := s.deps.Store.Get(ctx, readyProbe); err != nil {
		return &server.NotReady{Reason: "the session store does not answer", Err: err}
	}
	if s.deps.Backend.Usable != nil {
		if err := s.deps.Backend.Usable(); err != nil {
			return &server.NotReady{Reason: "the backend cannot run", Err: err}
		}
	}
	return nil
}

// start builds what the transports serve. requests, for HTTP, ties each
// call to the request that carries it (nil for stdio). The lifetime ends
// with ctx, unless detached (HTTP, which drains at a signal and then ends
// it with endLife).
func start(ctx context.Context, cfg *config.Config, env Env, version string, requests *server.RequestContexts, detached bool, log *slog.Logger) (*serving, error) {
	// Traces are read first: a setting that cannot be used stops the
	// server before anything starts.
	traces, err := trace.FromEnv(env.Getenv)
	if err != nil {
		return nil, err
	}
	parent := ctx
	if detached {
		parent = context.WithoutCancel(ctx)
	}
	life, cancel := context.WithCancel(parent)
	var lookup func(*mcp.CallToolRequest) context.Context
	if requests != nil {
		lookup = requests.Lookup
	}
	deps, err := NewDeps(ctx, cfg, env, log, life, lookup)
	if err != nil {
		cancel()
		return nil, err
	}
	idle := make(chan struct{})
	go func() {
		defer close(idle)
		newIdleReleaser().run(life)
	}()
	b := deps.Backend
	s := &serving{deps: deps, life: life, endLife: cancel, stop: func() {
		cancel()
		<-idle
		b.Close()
		// The calls have ended: nothing writes to the store any more.
		if err := deps.Store.Close(); err != nil {
			log.Warn("closing the session store", "err", err)
		}
	}}
	if s.srv, err = newServer(version, cfg, deps, log); err != nil {
		s.stop()
		return nil, err
	}
	if fs := deps.fileSearch; fs != nil {
		swept := make(chan struct{})
		go func() {
			defer close(swept)
			fs.sweep(life, sweepInterval(fs.ttl))
		}()
		stop := s.stop
		s.stop = func() {
			cancel()
			<-swept
			stop()
		}
	}
	addMCPServersResource(s.srv, b.Host)
	addModelsResource(s.srv, b.Counter)
	if traces != nil {
		s.stop = startTraces(s.srv, traces, requests != nil, version, log, s.stop)
	}
	return s, nil
}

// serveStdio serves one MCP session on stdin/stdout until the client closes
// stdin or ctx ends. Every call's context ends with the server's, so that
// shutting down stops the CLI processes still running.
func serveStdio(ctx context.Context, cfg *config.Config, version string, sio IO, env Env, log *slog.Logger) error {
	s, err := start(ctx, cfg, env, version, nil, false, log)
	if err != nil {
		return err
	}
	defer s.stop()
	if set := metrics.Current(); set != nil {
		s.srv.AddReceivingMiddleware(set.Middleware)
		stopMetrics, err := serveMetrics(ctx, cfg, set, log)
		if err != nil {
			return err
		}
		defer stopMetrics()
	}
	log.Info("serving MCP on stdio", "version", version, "gemini", cfg.CLI.Gemini, "cwd", s.deps.Cwd)
	return server.ServeStdio(s.life, s.endLife, s.srv, server.StdioOptions{In: sio.Stdin, Out: sio.Stdout, MaxPromptBytes: cfg.Tools.MaxPromptBytes, Log: log})
}

// serveHTTP serves MCP over HTTP until ctx ends (SIGINT, SIGTERM).
func serveHTTP(ctx context.Context, cfg *config.Config, version string, sio IO, env Env, log *slog.Logger) error {
	tokens, err := loadTokens(cfg)
	if err != nil {
		return err
	}
	redact.Of(log.Handler()).Add(tokens...)
	// Access tokens of an authorization server authenticate as well as
	// static ones.
	if len(cfg.HTTP.AuthIssuers) == 0 {
		if err := server.CheckBind(cfg.HTTP.Addr, tokens, cfg.HTTP.AllowInsecureRemote); err != nil {
			return err
		}
	}
	requests := server.NewRequestContexts()
	s, err := start(ctx, cfg, env, version, requests, true, log)
	if err != nil {
		return err
	}
	defer s.stop()
	maxConns := cfg.HTTP.MaxConns
	if maxConns == 0 {
		maxConns = server.DefaultMaxConns()
	}
	ln, err := net.Listen("tcp", cfg.HTTP.Addr)
	if err != nil {
		return err
	}
	oauth, err := oauthOptions(cfg, ln.Addr().String(), log)
	if err != nil {
		ln.Close()
		return err
	}
	inflight, drain := server.NewInflight(), server.NewDrain()
	h := server.NewHTTPHandler(s.srv, server.HTTPOptions{Version: version, Tokens: tokens, OAuth: oauth, AllowedOrigins: cfg.HTTP.AllowedOrigins, Requests: requests, Inflight: inflight,
		Drain: drain, Ready: s.ready,
		Stateless: cfg.HTTP.Stateless, MaxBodyBytes: int64(cfg.HTTP.MaxBodyBytes), MaxPromptBytes: cfg.Tools.MaxPromptBytes, BodyReadTimeout: cfg.HTTP.BodyReadTimeout, Log: log,
		MaxSessions: cfg.HTTP.MaxSessions, MaxSessionsPerToken: cfg.HTTP.MaxSessionsPerToken,
		SessionIdleTimeout: max(server.DefaultSessionIdleTimeout, 2*cfg.Turns.Timeout), Metrics: metricsOnHTTP(cfg)})
	if set := metrics.Current(); set != nil {
		// Added last, so outermost: refusals by the other middleware count. The
		// metrics listener's address is logged before the MCP one.
		s.srv.AddReceivingMiddleware(set.Middleware)
		stopMetrics, err := serveMetrics(ctx, cfg, set, log)
		if err != nil {
			ln.Close()
			return err
		}
		defer stopMetrics()
	}
	// The address line goes to stderr (never stdout) so that scripts and
	// tests binding port 0 can learn the port.
	log.Info("serving MCP over HTTP", "addr", ln.Addr().String(), "url", "http://"+ln.Addr().String()+server.PathMCP,
		"sse", "http://"+ln.Addr().String()+server.PathSSE, "auth", len(tokens) > 0 || oauth != nil, "stateless", cfg.HTTP.Stateless, "maxConns", maxConns, "maxConnsPerIP", cfg.HTTP.MaxConnsPerIP, "version", version)
	// At a signal the server drains: /readyz fails, new sessions and
	// calls are refused after --drain-delay, the calls in flight get
	// --drain-timeout to finish; those still running are then cancelled
	// and answered, their CLIs reaped, before the server exits; the grace
	// covers the CLIs' kill grace.
	return server.ServeHTTP(ctx, ln, h, server.ServeOptions{Grace: 5 * time.Second, EndCalls: s.endLife, Inflight: inflight, Server: s.srv,
		MaxConns: maxConns, MaxConnsPerIP: cfg.HTTP.MaxConnsPerIP, Log: log,
		Drain: drain, DrainDelay: cfg.HTTP.DrainDelay, DrainTimeout: cfg.HTTP.DrainTimeout, Hurry: sio.Hurry})
}

// loadTokens gathers bearer tokens from GEMINI_MCP_TOKENS and --token-file.
func loadTokens(cfg *config.Config) ([]string, error) {
	tokens := append([]string(nil), cfg.HTTP.Tokens...)
	if cfg.HTTP.TokenFile == "" {
		return tokens, nil
	}
	data, err := os.ReadFile(cfg.HTTP.TokenFile)
	if err != nil {
		return nil, fmt.Errorf("--token-file: %w", err)
	}
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if len(line) < 16 {
			return nil, fmt.Errorf("--token-file %s: every token must be at least 16 characters", cfg.HTTP.TokenFile)
		}
		tokens = append(tokens, line)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("--token-file %s holds no token", cfg.HTTP.TokenFile)
	}
	return tokens, nil
}

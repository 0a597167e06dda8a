package app

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/acp"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/apicreds"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/cli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/mcphost"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// newAPIBackend builds the Gemini API backend, which also counts tokens
// as its model does. It is nil in a build without that backend; the API
// package sets it when it is linked in, so that a server that does not
// use it does not pay for its packages. tools is the MCP host whose tools
// Gemini may call (nil for none).
var newAPIBackend func(cfg *config.Config, getenv func(string) string, store session.Store, tools backend.ToolHost, log *slog.Logger) (backend.Backend, backend.TokenCounter, error)

// errNoAPIBackend is what --backend api gets from a build without it.
var errNoAPIBackend = errors.New("the API backend is not available in this build: use --backend warm or oneshot, with the Gemini CLI")

// builtBackend is what newBackend builds: the backend and the parts of it
// that the rest of the server uses.
type builtBackend struct {
	// Backend runs the turns, at most --max-concurrent at once.
	Backend backend.Backend
	// Host is the MCP host whose tools Gemini may call: the API backend's,
	// with --mcp-config; nil otherwise.
	Host *mcphost.Host
	// Counter counts tokens as the backend's model does: the API
	// backend's; nil for the CLI backends, which cannot count.
	Counter backend.TokenCounter
	// Usable says whether the backend can run a turn, without asking
	// Google: for the CLI backends, that the gemini executable is found;
	// for the API backend, that credentials are set.
	Usable func() error
}

// Close closes the backend, then the MCP host it was given.
func (b *builtBackend) Close() {
	b.Backend.Close()
	if b.Host != nil {
		b.Host.Close()
	}
}

// newBackend builds the backend cfg chooses (see chooseBackend), limited
// to --max-concurrent turns at once. It is the one place that decides how
// turns run: which backend, what the warm one falls back to, and the
// limits (per-call timeout, kill grace) every backend applies.
func newBackend(cfg *config.Config, env Env, store session.Store, log *slog.Logger) (*builtBackend, error) {
	c, err := chooseBackend(cfg, env.Getenv)
	if err != nil {
		return nil, err
	}
	log.Info("backend chosen", "backend", c.name, "why", c.why)
	if c.name != config.BackendAPI && c.cliErr != nil {
		log.Warn("calls will fail until this is fixed", "err", c.cliErr)
	}
	if c.name != config.BackendAPI && cfg.API.MCPConfig != "" {
		log.Warn("--mcp-config is for the API backend: the Gemini CLI uses the mcpServers of its own settings (~/.gemini/settings.json)", "backend", c.name)
	}
	switch c.name {
	case config.BackendAPI:
		if newAPIBackend == nil {
			return nil, errNoAPIBackend
		}
		host, err := startToolHost(cfg, env, store, log)
		if err != nil {
			return nil, err
		}
		b, counter, err := newAPIBackend(cfg, env.Getenv, store, toolHostFor(host), log)
		if err != nil {
			if host != nil {
				host.Close()
			}
			return nil, err
		}
		return &builtBackend{Backend: backend.Limit(b, cfg.Turns.MaxConcurrent), Host: host, Counter: counter, Usable: apiUsable(env.Getenv)}, nil
	case config.BackendOneshot:
		return &builtBackend{Backend: backend.Limit(cli.NewRunner(cliOptions(cfg, env), log), cfg.Turns.MaxConcurrent), Usable: cliUsable(cfg.CLI.Gemini)}, nil
	}
	opts := cliOptions(cfg, env)
	spareAge := cfg.Warm.SpareAge
	if spareAge == 0 {
		spareAge = -1 // the flag's 0 turns spares off
	}
	warm := acp.WarmOptions{Processes: cfg.Warm.Processes, MaxPrompts: cfg.Warm.MaxPrompts, MaxRSS: int64(cfg.Warm.MaxRSSBytes), IdleTimeout: cfg.Warm.IdleTimeout,
		SpareAge: spareAge, MaxSessions: cfg.Warm.MaxSessions, Spares: cfg.Warm.Spares, NotOnConnect: !cfg.Warm.OnConnect}
	b := acp.New(acp.Options{Warm: warm, CLI: opts, Fallback: cli.NewRunner(opts, log)}, log)
	return &builtBackend{Backend: backend.Limit(b, cfg.Turns.MaxConcurrent), Usable: cliUsable(cfg.CLI.Gemini)}, nil
}

// cliUsable is a CLI backend's readiness: the gemini executable is found
// (a look at PATH or the file, at every check, so that an image whose CLI
// was removed or never installed is not ready).
func cliUsable(gemini string) func() error {
	return func() error {
		if _, err := geminicli.Resolve(gemini); err != nil {
			return err
		}
		return nil
	}
}

// apiUsable is the API backend's readiness: API or Vertex AI credentials
// are set in the environment. Whether Google accepts them is for the
// calls to find: a check per probe would cost a request to Google.
func apiUsable(getenv func(string) string) func() error {
	return func() error {
		if len(apiCredentials(getenv)) == 0 {
			return errors.New("no Gemini API or Vertex AI credentials are set")
		}
		return nil
	}
}

// choice is the backend that would run, and why.
type choice struct {
	name   config.Backend // warm, oneshot or api
	why    string
	cliErr error    // why the CLI cannot be found, if it cannot
	creds  []string // the API credentials found, for the api backend
}

// chooseBackend decides which backend serves: the one --backend names, or
// for auto the warm CLI backend when a gemini executable is found, else
// the API backend when API or Vertex AI credentials are set, else an error
// that explains both ways.
func chooseBackend(cfg *config.Config, getenv func(string) string) (choice, error) {
	c := choice{name: cfg.Backend}
	var cmd geminicli.Command
	cmd, c.cliErr = geminicli.Resolve(cfg.CLI.Gemini)
	c.creds = apiCredentials(getenv)
	switch cfg.Backend {
	case config.BackendAPI:
		c.why = "--backend api"
		if len(c.creds) > 0 {
			c.why += "; credentials: " + strings.Join(c.creds, ", ")
		}
		return c, nil
	case config.BackendWarm, config.BackendOneshot:
		c.why = "--backend " + string(cfg.Backend)
		return c, nil
	}
	switch {
	case c.cliErr == nil:
		c.name, c.why = config.BackendWarm, "auto: the Gemini CLI was found at "+cmd.String()
	case len(c.creds) > 0:
		c.name, c.why = config.BackendAPI, "auto: no Gemini CLI was found, and API credentials are set: "+strings.Join(c.creds, ", ")
	default:
		return c, fmt.Errorf("--backend auto found no way to reach Gemini. "+
			"For the Gemini CLI backends: %v "+
			"For the Gemini API backend (no Node needed): %s", c.cliErr, apicreds.CredentialsHelp)
	}
	return c, nil
}

// apiCredentials names the Gemini API or Vertex AI credentials the API
// backend would use, read from the environment alone; none when they are
// missing or incomplete.
func apiCredentials(getenv func(string) string) []string {
	if c := apicreds.Read(getenv); c.OK {
		return []string{c.What}
	}
	return nil
}

// cliOptions is the configuration of the CLI backends.
func cliOptions(cfg *config.Config, env Env) geminicli.Options {
	return geminicli.Options{
		Gemini:                cfg.CLI.Gemini,
		Env:                   []string{childNestEnv(env.Getenv)},
		DefaultModel:          cfg.Turns.Model,
		ApprovalMode:          cfg.CLI.ApprovalMode,
		Sandbox:               cfg.CLI.Sandbox,
		SkipTrust:             cfg.CLI.SkipTrust,
		IncludeDirectories:    cfg.CLI.IncludeDirectories,
		Extensions:            cfg.CLI.Extensions,
		AllowedMCPServerNames: cfg.CLI.AllowedMCPServerNames,
		Timeout:               cfg.Turns.Timeout,
		MaxOutputBytes:        cfg.Turns.MaxOutputBytes,
	}
}

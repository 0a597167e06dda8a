// Package config reads the server's configuration from flags and
// GEMINI_MCP_* environment variables. A flag wins over its variable; a
// variable wins over the default. Everything here is the operator's choice:
// none of it can be set through tool arguments.
//
// config imports no package of this module: it holds the settings, their
// defaults (defaults.go) and the table of flags (flags.go), and every
// other package may read them. What only another package knows — whether
// a model name is valid, which tools a rate limit may name — the caller
// passes in as Rules.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Config is the whole configuration, one struct per area.
type Config struct {
	Backend Backend // --backend: auto, warm, oneshot or api
	Turns   Turns
	CLI     CLI
	Warm    Warm
	API     API
	HTTP    HTTP
	Tools   Tools
	Store   Store
	Expert  Expert

	LogLevel    slog.Level
	ShowVersion bool
	// Warnings are configuration problems that do not stop the server.
	Warnings []string

	logLevel string // --log-level as given, read into LogLevel
}

// Turns is how a turn runs, on any backend.
type Turns struct {
	Model          string        // for calls that name none; "" lets the backend choose
	Timeout        time.Duration // per call, 0 for none
	MaxConcurrent  int           // turns at once; further ones wait in arrival order
	MaxOutputBytes int           // largest output read from Gemini for one turn
}

// CLI is how the Gemini CLI backends start the CLI.
type CLI struct {
	Gemini                string // the executable
	ApprovalMode          string
	Sandbox               bool
	SkipTrust             bool
	IncludeDirectories    []string
	Extensions            []string
	AllowedMCPServerNames []string
	AllowNested           bool // serve also when started by this server's own CLI
}

// Warm is the warm backend's pool of gemini --acp processes.
type Warm struct {
	Processes   int
	MaxPrompts  int
	MaxRSSBytes int
	IdleTimeout time.Duration
	SpareAge    time.Duration // 0: no spare sessions
	MaxSessions int
	Spares      int // spare sessions per process and folder
	// OnConnect starts a process and its spare session when a client
	// connects, ahead of its first chat.
	OnConnect bool
}

// API is the API backend as an MCP host.
type API struct {
	MCPConfig string // mcpServers whose tools Gemini may call
	// MCPClientMetadataURL is the host's Client ID Metadata Document.
	MCPClientMetadataURL string
	MaxToolRounds        int
	AllowMCPTools        []string
	// MaxInlineBytes bounds a request's size with media sent inline;
	// media that do not fit go through the Files API.
	MaxInlineBytes int
	// CacheTTL keeps a conversation's file context in a context cache
	// this long after its last use; 0 makes none.
	CacheTTL time.Duration
	// FileSearchTTL is how long a File Search store is kept after its
	// last use.
	FileSearchTTL time.Duration
	// FallbackModel answers a call whose model's quota is exhausted; ""
	// for none.
	FallbackModel string
	// ServerHistory continues plain text conversations on the
	// Interactions API by their stored interaction.
	ServerHistory bool
}

// HTTP is the HTTP transport; Addr "" serves stdio instead.
type HTTP struct {
	Addr                string
	Tokens              []string // GEMINI_MCP_TOKENS
	TokenFile           string
	AllowedOrigins      []string
	Stateless           bool
	AllowInsecureRemote bool
	MaxBodyBytes        int
	BodyReadTimeout     time.Duration
	DrainDelay          time.Duration
	DrainTimeout        time.Duration
	MaxSessions         int
	MaxSessionsPerToken int
	MaxConns            int // 0: three quarters of the open-file limit
	MaxConnsPerIP       int
	// OAuth: the trusted issuers, this server's resource URI ("": from
	// Addr) and the scopes a token must hold.
	AuthIssuers  []string
	AuthAudience string
	// AuthAcceptAudiences are other aud values a token may carry.
	AuthAcceptAudiences []string
	AuthScopes          []string
	// Opaque tokens: the introspection endpoint (RFC 7662) and this
	// server's client there ("": no introspection).
	AuthIntrospectionURL string
	AuthClientID         string
	AuthClientSecret     string // GEMINI_MCP_AUTH_CLIENT_SECRET
	// Metrics is where /metrics is served: "" nowhere, "on" on the --http
	// listener, else an address of its own.
	Metrics            string
	MetricsAllowRemote bool
}

// MetricsOnHTTP is the --metrics value that serves /metrics on the --http
// listener.
const MetricsOnHTTP = "on"

// Tools is what tool calls may reach and how their results come.
type Tools struct {
	Cwd              string   // for calls that give none
	AllowedRoots     []string // the directories a call's cwd may be
	ShareSessions    bool
	SessionIDInText  bool
	MaxPromptBytes   int
	MaxAnswerBytes   int
	ProgressInterval time.Duration
	JobAfter         time.Duration // hand a call still running after it over to a job; 0 for never
	RateLimits       RateLimits
	// Toolset is --tools as given; Served the tools it serves, in the
	// registry's order (nil: every tool, when Rules.Toolset is nil).
	Toolset string
	Served  []string
}

// Store is where sessions live: see the flags' help and
// docs/operators.md, "Where sessions live".
type Store struct {
	URL      string // "" (the embedded store in StateDir), sqlite:PATH, memory:, redis://…, redis+cluster://… or redis+sentinel://…
	StateDir string
	Prefix   string
	TTL      time.Duration
	MaxTurns int
}

// Expert is the expert tools' file context: see docs/expert-tools.md.
type Expert struct {
	ProjectRoot      string
	MaxFileBytes     int
	MaxMediaBytes    int
	MaxFiles         int
	MaxContextTokens int
	SendSecretFiles  bool
	Timeout          time.Duration
	// PrecommitAnyOwner lets precommit read a git repository another
	// user owns, which it otherwise refuses as git does.
	PrecommitAnyOwner bool
}

// Rules are the checks config cannot make itself, as what they need to
// know belongs to packages config does not import; the caller supplies
// them. A nil rule accepts everything.
type Rules struct {
	// Model checks a model name (--model); its error follows "--model: ".
	Model func(string) error
	// RateLimitTools are the tools --rate-limits may name.
	RateLimitTools []string
	// Toolset reads --tools into the tools to serve; its error follows
	// "--tools: ".
	Toolset func(string) ([]string, error)
}

// BodyBytesFor is the largest HTTP body a call needs when prompts may
// hold maxPrompt bytes: a prompt and a system prompt of control
// characters, which JSON escapes as \u00XX, six bytes for one, plus room
// for the rest of the request. Other characters take at most three times
// their size once escaped.
func BodyBytesFor(maxPrompt int) int { return 2*6*maxPrompt + 64<<10 }

// minBodyBytes is the least --max-body-bytes left unset comes to.
const minBodyBytes = 4 << 20

// ApprovalModes are the CLI's --approval-mode values.
var ApprovalModes = []string{"default", "auto_edit", "yolo", "plan"}

// ErrHelp is returned when the user asked for help; usage was printed.
var ErrHelp = flag.ErrHelp

// Parse reads args (without the program name or subcommand) and the
// environment through getenv. For -h/--help it writes the header followed
// by the flag list to w and returns ErrHelp. Errors are only returned: the
// caller prints them (on stderr), apart from the help that goes to stdout.
func Parse(name, header string, args []string, getenv func(string) string, w io.Writer, rules Rules) (*Config, error) {
	c := &Config{}
	c.Tools.RateLimits.tools = rules.RateLimitTools
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// The flag package prints errors and the usage on its own; Parse
	// returns the errors instead and prints the help only when asked.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var envErrs []error
	for _, s := range flags {
		if err := s.bind(c, fs, getenv); err != nil {
			envErrs = append(envErrs, err)
		}
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(w, header)
			fs.SetOutput(w)
			fs.PrintDefaults()
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (see --help)", fs.Arg(0))
	}
	if err := errors.Join(envErrs...); err != nil {
		return nil, err
	}
	if err := c.LogLevel.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %q is not one of debug, info, warn, error", c.logLevel)
	}
	return c, c.validate(rules)
}

func (c *Config) validate(rules Rules) error {
	if c.CLI.ApprovalMode != "" && !slices.Contains(ApprovalModes, c.CLI.ApprovalMode) {
		return fmt.Errorf("--approval-mode: %q is not one of %s", c.CLI.ApprovalMode, strings.Join(ApprovalModes, ", "))
	}
	for _, l := range []struct {
		name string
		vals []string
	}{{"--include-directories", c.CLI.IncludeDirectories}, {"--extensions", c.CLI.Extensions}, {"--allowed-mcp-server-names", c.CLI.AllowedMCPServerNames}} {
		for _, v := range l.vals {
			if strings.HasPrefix(v, "-") || strings.ContainsAny(v, "\x00\n") {
				return fmt.Errorf("%s: invalid value %q", l.name, v)
			}
		}
	}
	if c.Turns.Timeout < 0 {
		return errors.New("--timeout must not be negative")
	}
	if c.Turns.MaxConcurrent < 1 || c.Turns.MaxConcurrent > 1024 {
		return fmt.Errorf("--max-concurrent must be between 1 and 1024, not %d", c.Turns.MaxConcurrent)
	}
	if c.Tools.JobAfter < 0 {
		return errors.New("--job-after must not be negative (0: calls never become jobs)")
	}
	if c.Tools.ProgressInterval < 100*time.Millisecond {
		return errors.New("--progress-interval must be at least 100ms")
	}
	if c.Tools.MaxPromptBytes <= 0 || c.Turns.MaxOutputBytes <= 0 || c.Tools.MaxAnswerBytes < 1000 {
		return errors.New("--max-prompt-bytes and --max-output-bytes must be positive, --max-answer-bytes at least 1000")
	}
	if c.API.MaxToolRounds < 1 || c.API.MaxToolRounds > 1000 {
		return fmt.Errorf("--max-tool-rounds must be between 1 and 1000, not %d", c.API.MaxToolRounds)
	}
	for _, v := range c.API.AllowMCPTools {
		if strings.ContainsAny(v, " \t\x00\n") || strings.HasPrefix(v, ".") || strings.HasSuffix(v, ".") {
			return fmt.Errorf("--allow-mcp-tools: %q is not a server name or server.tool", v)
		}
	}
	if c.Expert.MaxFileBytes < 1 || c.Expert.MaxFiles < 1 || c.Expert.MaxContextTokens < 1 || c.Expert.MaxMediaBytes < 1 {
		return errors.New("--max-file-bytes, --max-media-bytes, --max-files and --max-context-tokens must be at least 1")
	}
	if c.Expert.Timeout < 0 {
		return errors.New("--expert-timeout must not be negative (0 for no limit)")
	}
	h := &c.HTTP
	if err := checkMetrics(h); err != nil {
		return err
	}
	if h.MaxSessions < 1 || h.MaxSessionsPerToken < 1 {
		return errors.New("--max-sessions and --max-sessions-per-token must be at least 1")
	}
	if h.BodyReadTimeout <= 0 {
		return errors.New("--body-read-timeout must be positive, e.g. 30s")
	}
	if h.DrainDelay < 0 || h.DrainTimeout < 0 {
		return errors.New("--drain-delay and --drain-timeout must not be negative (0: none)")
	}
	if h.MaxConns < 0 || h.MaxConnsPerIP < 0 {
		return errors.New("--max-conns and --max-conns-per-ip must not be negative (--max-conns 0: three quarters of the open-file limit; --max-conns-per-ip 0: no limit)")
	}
	if need := BodyBytesFor(c.Tools.MaxPromptBytes); h.MaxBodyBytes == 0 {
		h.MaxBodyBytes = max(minBodyBytes, need)
	} else if h.MaxBodyBytes < need {
		c.Warnings = append(c.Warnings, fmt.Sprintf("--max-body-bytes %d is below the %d bytes a call with a prompt and a system prompt of --max-prompt-bytes can take once JSON-escaped: "+
			"such calls get HTTP 413; raise --max-body-bytes or leave it unset to size it from --max-prompt-bytes", h.MaxBodyBytes, need))
	}
	if u := c.API.MCPClientMetadataURL; u != "" {
		if p, err := url.Parse(u); err != nil || p.Scheme != "https" || p.Host == "" || strings.Trim(p.Path, "/") == "" || p.Fragment != "" {
			return fmt.Errorf("--mcp-client-metadata-url %q: must be an https:// URL with a path (where the Client ID Metadata Document is served), e.g. https://example.com/oauth/client.json", u)
		}
	}
	if len(h.AuthIssuers) > 0 {
		if err := checkAuth(h); err != nil {
			return err
		}
	} else if len(h.AuthAcceptAudiences) > 0 {
		return errors.New("--auth-accept-audiences needs --auth-issuer: the issuer whose tokens carry those audiences")
	} else if h.AuthIntrospectionURL != "" || h.AuthClientID != "" || h.AuthClientSecret != "" {
		return errors.New("--auth-introspection-url, --auth-client-id and GEMINI_MCP_AUTH_CLIENT_SECRET need --auth-issuer: the issuer whose tokens are introspected")
	}
	for _, t := range h.Tokens {
		if len(t) < 16 {
			return errors.New("GEMINI_MCP_TOKENS: every token must be at least 16 characters")
		}
	}
	if !c.Backend.valid() {
		return fmt.Errorf("--backend: %q is not auto, warm, oneshot or api", c.Backend)
	}
	if c.Warm.Processes < 1 || c.Warm.Processes > 64 || c.Warm.MaxPrompts < 1 {
		return errors.New("--warm-processes must be 1 to 64, --warm-max-prompts at least 1")
	}
	if c.Warm.MaxSessions < 1 || c.Warm.SpareAge < 0 {
		return errors.New("--warm-max-sessions must be at least 1, --warm-spare-age 0 (no spare sessions) or more")
	}
	if c.Warm.Spares < 1 || c.Warm.Spares > 16 {
		return errors.New("--warm-spares must be 1 to 16")
	}
	if c.API.CacheTTL < 0 {
		return errors.New("--cache-ttl must be 0 (no context caches) or more")
	}
	if c.API.FileSearchTTL < time.Minute {
		return errors.New("--file-search-ttl must be 1m or more")
	}
	if err := c.checkToolset(rules); err != nil {
		return err
	}
	if c.Turns.Model != "" && rules.Model != nil {
		if err := rules.Model(c.Turns.Model); err != nil {
			return fmt.Errorf("--model: %w", err)
		}
	}
	if c.API.FallbackModel != "" && rules.Model != nil {
		if err := rules.Model(c.API.FallbackModel); err != nil {
			return fmt.Errorf("--fallback-model: %w", err)
		}
	}
	if c.CLI.Gemini == "" {
		return errors.New("--gemini must not be empty")
	}
	return c.validateStore()
}

// validateStore checks the flags of the session store. Which kinds of
// store exist is the app's to say (it opens them); here only the form.
func (c *Config) validateStore() error {
	s := c.Store
	if s.URL != "" && !strings.Contains(s.URL, ":") {
		return fmt.Errorf("--store: %q names no kind of store: use sqlite:PATH, memory:, redis://HOST:PORT/DB, redis+cluster://HOST:PORT,… or redis+sentinel://HOST:PORT,…/MASTER, or leave it unset for the embedded store in --state-dir", s.URL)
	}
	if s.Prefix == "" || strings.ContainsFunc(s.Prefix, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Errorf("--store-prefix: %q must be non-empty, without spaces or control characters (the default is %q)", s.Prefix, DefaultStorePrefix)
	}
	if s.TTL < time.Minute {
		return fmt.Errorf("--session-ttl must be at least 1m, not %v: it is how long a session lives after its last turn (the default is %v)", s.TTL, DefaultSessionTTL)
	}
	if s.MaxTurns < 1 {
		return fmt.Errorf("--max-turns must be at least 1, not %d (the default is %d)", s.MaxTurns, DefaultMaxTurns)
	}
	return nil
}

// checkMetrics checks --metrics: off, on (with --http), or a host:port
// that is loopback unless --metrics-allow-remote.
func checkMetrics(h *HTTP) error {
	switch h.Metrics {
	case "", "off":
		h.Metrics = ""
		return nil
	case MetricsOnHTTP:
		if h.Addr == "" {
			return errors.New("--metrics on serves /metrics on the --http listener: set --http, or give --metrics an address of its own (e.g. 127.0.0.1:9464)")
		}
		return nil
	}
	host, port, err := net.SplitHostPort(h.Metrics)
	if err != nil || port == "" {
		return fmt.Errorf("--metrics %q: give on, off or host:port (e.g. 127.0.0.1:9464)", h.Metrics)
	}
	if h.Addr != "" && h.Metrics == h.Addr && port != "0" {
		return fmt.Errorf("--metrics %s is the --http address: use --metrics on to serve /metrics there", h.Metrics)
	}
	if !IsLoopbackHost(host) && !h.MetricsAllowRemote {
		return fmt.Errorf("--metrics %s is not a loopback address: /metrics has no authentication and names the tools, models and backends in use; "+
			"bind 127.0.0.1, or pass --metrics-allow-remote when a firewall or network policy keeps the port to the scraper", h.Metrics)
	}
	return nil
}

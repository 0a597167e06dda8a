// Package config reads the server's configuration from flags and
// GEMINI_MCP_* environment variables. A flag wins over its variable; a
// variable wins over the default. Everything here is the operator's choice:
// none of it can be set through tool arguments.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/acp"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/ratelimit"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/validate"
)

// Config is the whole configuration.
type Config struct {
	Gemini                string
	Model                 string
	StateDir              string
	Cwd                   string
	ApprovalMode          string
	Sandbox               bool
	SkipTrust             bool
	IncludeDirectories    []string
	Extensions            []string
	AllowedMCPServerNames []string
	MCPConfig             string // mcpServers for the API backend's MCP host
	AllowNested           bool
	Timeout               time.Duration
	MaxConcurrent         int
	ProgressInterval      time.Duration
	MaxPromptBytes        int
	MaxOutputBytes        int
	MaxAnswerBytes        int
	LogLevel              slog.Level
	ShowVersion           bool
	// Warnings are configuration problems that do not stop the server.
	Warnings []string

	Backend         string // "auto", "warm", "oneshot" or "api"
	WarmProcesses   int
	WarmMaxPrompts  int
	WarmMaxRSSBytes int
	WarmIdleTimeout time.Duration
	WarmSpareAge    time.Duration // 0: no spare sessions
	WarmMaxSessions int

	// The API backend as an MCP host.
	MaxToolRounds int
	AllowMCPTools []string

	HTTP                string // serve HTTP on this address instead of stdio
	Tokens              []string
	TokenFile           string
	AllowedOrigins      []string
	Stateless           bool
	AllowInsecureRemote bool
	MaxBodyBytes        int
	BodyReadTimeout     time.Duration
	MaxSessions         int
	MaxSessionsPerToken int
	MaxConns            int // 0: server.DefaultMaxConns
	MaxConnsPerIP       int

	// What tool calls may reach: see the flags' help.
	AllowedRoots    []string
	ShareSessions   bool
	SessionIDInText bool

	// Where sessions live: see the flags' help and docs/operators.md,
	// "Where sessions live".
	Store       string // "" (the embedded store in the state directory), sqlite:PATH, memory: or redis://…
	StorePrefix string
	SessionTTL  time.Duration
	MaxTurns    int

	// The expert tools: see docs/expert-tools.md.
	ProjectRoot      string
	MaxFileBytes     int
	MaxFiles         int
	MaxContextTokens int
	SendSecretFiles  bool
	ExpertTimeout    time.Duration
	RateLimits       ratelimit.RateLimitsFlag
}

// Defaults.
const (
	DefaultTimeout          = 300 * time.Second
	DefaultMaxConcurrent    = 4
	DefaultProgressInterval = 5 * time.Second
	DefaultMaxPromptBytes   = 1 << 20
	DefaultMaxOutputBytes   = 32 << 20
	DefaultMaxAnswerBytes   = 60000
	DefaultMaxToolRounds    = 10 // the API backend's api.DefaultMaxToolRounds
)

// BodyBytesFor is the largest HTTP body a call needs when prompts may
// hold maxPrompt bytes: a prompt and a system prompt of control
// characters, which JSON escapes as \u00XX, six bytes for one, plus room
// for the rest of the request. Other characters take at most three times
// their size once escaped.
func BodyBytesFor(maxPrompt int) int { return 2*6*maxPrompt + 64<<10 }

// ApprovalModes are the CLI's --approval-mode values.
var ApprovalModes = []string{"default", "auto_edit", "yolo", "plan"}

// ErrHelp is returned when the user asked for help; usage was printed.
var ErrHelp = flag.ErrHelp

// Rules are the checks of the configuration that config leaves to the
// app, as what they need to make them.
type Rules struct {
	// RateLimitTools are the tools --rate-limits may name: every tool the
	// server offers.
	RateLimitTools []string
}

// Parse reads args (without the program name or subcommand) and the
// environment through getenv, checked by rules. For -h/--help it writes
// the header followed by the flag list to w and returns ErrHelp. Errors
// are only returned: the caller prints them (on stderr), apart from the
// help that goes to stdout.
func Parse(name, header string, args []string, getenv func(string) string, w io.Writer, rules Rules) (*Config, error) {
	c := &Config{}
	c.RateLimits.Tools = rules.RateLimitTools
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// The flag package prints errors and the usage on its own; Parse
	// returns the errors instead and prints the help only when asked.
	fs.SetOutput(io.Discard)
	var envErrs []error
	env := func(key string) (string, bool) {
		v := strings.TrimSpace(getenv(key))
		return v, v != ""
	}
	str := func(p *string, flagName, key, def, usage string) {
		*p = def
		if v, ok := env(key); ok {
			*p = v
		}
		fs.StringVar(p, flagName, *p, usage+" ("+key+")")
	}
	boolean := func(p *bool, flagName, key, usage string) {
		if v, ok := env(key); ok {
			b, err := parseBool(v)
			if err != nil {
				envErrs = append(envErrs, fmt.Errorf("%s: %w", key, err))
			}
			*p = b
		}
		fs.BoolVar(p, flagName, *p, usage+" ("+key+")")
	}
	list := func(p *[]string, flagName, key, usage string) {
		l := &listValue{p: p}
		if v, ok := env(key); ok {
			*p = splitList(v)
			l.fromEnv = true
		}
		fs.Var(l, flagName, usage+"; comma-separated or repeated ("+key+")")
	}
	size := func(p *int, flagName, key string, def int, usage string) {
		*p = def
		if v, ok := env(key); ok {
			n, err := parseSize(v)
			if err != nil {
				envErrs = append(envErrs, fmt.Errorf("%s: %w", key, err))
			}
			*p = n
		}
		fs.Var(&sizeValue{p: p}, flagName, usage+"; a `size` in bytes, or with a KiB, MiB or GiB suffix ("+key+")")
	}

	duration := func(p *time.Duration, flagName, key string, def time.Duration, usage string) {
		*p = def
		if v, ok := env(key); ok {
			d, err := parseDuration(v)
			if err != nil {
				envErrs = append(envErrs, fmt.Errorf("%s: %w", key, err))
			}
			*p = d
		}
		fs.Var(&durationValue{p: p}, flagName, usage+"; a `duration` such as 90s or 10m ("+key+")")
	}
	str(&c.Gemini, "gemini", "GEMINI_MCP_GEMINI", "gemini", "the Gemini CLI executable: a name looked up in PATH, or a path")
	str(&c.Model, "model", "GEMINI_MCP_MODEL", "", "model for calls that name none (e.g. gemini-2.5-flash); saves the CLI's model-router round trip but turns off its automatic choice (default: the CLI decides)")
	str(&c.StateDir, "state-dir", "GEMINI_MCP_STATE_DIR", "", "where session records are kept (default: $XDG_STATE_HOME/gemini-mcp-server, ~/.local/state/gemini-mcp-server, or the user config directory on macOS and Windows)")
	str(&c.Cwd, "cwd", "GEMINI_MCP_CWD", "", "working directory for calls that give no cwd (default: the server's own)")
	str(&c.ApprovalMode, "approval-mode", "GEMINI_MCP_APPROVAL_MODE", "", "the CLI's --approval-mode for every call: default, auto_edit, yolo or plan (default: not passed, so the CLI's headless default applies: tools that need approval are refused)")
	boolean(&c.Sandbox, "sandbox", "GEMINI_MCP_SANDBOX", "run the CLI's tools in its sandbox (--sandbox)")
	boolean(&c.SkipTrust, "skip-trust", "GEMINI_MCP_SKIP_TRUST", "trust every working directory for the call (--skip-trust) instead of failing on untrusted folders")
	list(&c.IncludeDirectories, "include-directories", "GEMINI_MCP_INCLUDE_DIRECTORIES", "extra directories the CLI may read (--include-directories)")
	list(&c.Extensions, "extensions", "GEMINI_MCP_EXTENSIONS", "the only CLI extensions to load, or none (--extensions)")
	list(&c.AllowedMCPServerNames, "allowed-mcp-server-names", "GEMINI_MCP_ALLOWED_MCP_SERVER_NAMES", "the only MCP servers the CLI may use (--allowed-mcp-server-names)")
	str(&c.MCPConfig, "mcp-config", "GEMINI_MCP_CONFIG", "", "API backend: a JSON `file` of mcpServers in the Gemini CLI's format (a settings.json will do) whose tools Gemini may call; the CLI backends ignore it, as the Gemini CLI reads its own mcpServers from ~/.gemini/settings.json")
	boolean(&c.AllowNested, "allow-nested", "GEMINI_MCP_ALLOW_NESTED", "serve the tools also when started by one of this server's own Gemini CLI processes (by default such a copy serves none, so that a chat cannot call itself)")
	duration(&c.Timeout, "timeout", "GEMINI_MCP_TIMEOUT", DefaultTimeout, "per-call limit, 0 for none")
	duration(&c.ProgressInterval, "progress-interval", "GEMINI_MCP_PROGRESS_INTERVAL", DefaultProgressInterval, "how often a running call reports progress to clients that ask for it")
	c.MaxConcurrent = DefaultMaxConcurrent
	if v, ok := env("GEMINI_MCP_MAX_CONCURRENT"); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			envErrs = append(envErrs, fmt.Errorf("GEMINI_MCP_MAX_CONCURRENT: %q is not a number", v))
		}
		c.MaxConcurrent = n
	}
	fs.IntVar(&c.MaxConcurrent, "max-concurrent", c.MaxConcurrent, "most gemini processes at once; further calls wait in arrival order (GEMINI_MCP_MAX_CONCURRENT)")
	size(&c.MaxPromptBytes, "max-prompt-bytes", "GEMINI_MCP_MAX_PROMPT_BYTES", DefaultMaxPromptBytes, "largest prompt or system prompt accepted")
	size(&c.MaxOutputBytes, "max-output-bytes", "GEMINI_MCP_MAX_OUTPUT_BYTES", DefaultMaxOutputBytes, "largest output read from gemini (the CLI's, or all the API's streamed answers of a turn) before a call is stopped")
	size(&c.MaxAnswerBytes, "max-answer-bytes", "GEMINI_MCP_MAX_ANSWER_BYTES", DefaultMaxAnswerBytes, "largest answer returned in one result; longer answers come in pages fetched with the chat-page tool")
	if v, ok := env("GEMINI_MCP_BACKEND"); ok && !isBackend(v) {
		// gemini-mcp-tool, another MCP server, reads the same variable
		// (with values such as "gemini"): a shared environment must not
		// stop this server from starting.
		c.Warnings = append(c.Warnings, fmt.Sprintf("ignoring GEMINI_MCP_BACKEND=%q: this server's backends are auto, warm, oneshot and api (the variable may be meant for gemini-mcp-tool); using auto", v))
		getenv = withoutKey(getenv, "GEMINI_MCP_BACKEND")
	}
	str(&c.Backend, "backend", "GEMINI_MCP_BACKEND", "auto", "how calls run: auto (warm when a gemini executable is found, else api when API or Vertex AI credentials are set), "+
		"warm (a pool of long-lived gemini --acp processes, milliseconds per call; calls it cannot serve run one-shot), oneshot (a gemini process per call) "+
		"or api (the Gemini API itself, no Node; GEMINI_API_KEY, GOOGLE_API_KEY or Vertex AI)")
	intFlag := func(p *int, flagName, key string, def int, usage string) {
		*p = def
		if v, ok := env(key); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				envErrs = append(envErrs, fmt.Errorf("%s: %q is not a number", key, v))
			}
			*p = n
		}
		fs.IntVar(p, flagName, *p, usage+" ("+key+")")
	}
	intFlag(&c.WarmProcesses, "warm-processes", "GEMINI_MCP_WARM_PROCESSES", acp.DefaultWarmProcesses, "warm backend: most gemini --acp processes (about 220 MB each)")
	intFlag(&c.WarmMaxPrompts, "warm-max-prompts", "GEMINI_MCP_WARM_MAX_PROMPTS", acp.DefaultWarmMaxPrompts, "warm backend: recycle a process after this many prompts")
	duration(&c.WarmIdleTimeout, "warm-idle-timeout", "GEMINI_MCP_WARM_IDLE_TIMEOUT", acp.DefaultWarmIdleTimeout, "warm backend: stop a process idle this long, giving its memory back")
	duration(&c.WarmSpareAge, "warm-spare-age", "GEMINI_MCP_WARM_SPARE_AGE", acp.DefaultWarmSpareAge, "warm backend: keep a session made ahead of time per process and folder, used by a new chat within this age (its date and folder listing are as of its creation), 0 for none")
	intFlag(&c.WarmMaxSessions, "warm-max-sessions", "GEMINI_MCP_WARM_MAX_SESSIONS", acp.DefaultWarmMaxSessions, "warm backend: recycle a process holding more sessions than this (each new session costs more in a process holding many)")
	intFlag(&c.MaxToolRounds, "max-tool-rounds", "GEMINI_MCP_MAX_TOOL_ROUNDS", DefaultMaxToolRounds, "api backend: most rounds of downstream MCP tool calls in one turn; after the last, Gemini is asked for its answer without more")
	list(&c.AllowMCPTools, "allow-mcp-tools", "GEMINI_MCP_ALLOW_MCP_TOOLS", "api backend: untrusted downstream MCP tools that run without asking the user, as server (all its tools) or server.tool; "+
		"others run once the user allows them through MCP elicitation, and are refused when the client cannot be asked")
	size(&c.WarmMaxRSSBytes, "warm-max-rss", "GEMINI_MCP_WARM_MAX_RSS", acp.DefaultWarmMaxRSS, "warm backend: recycle a process past this resident memory (e.g. 700MiB)")
	str(&c.HTTP, "http", "GEMINI_MCP_HTTP", "", "serve MCP over HTTP on this address (e.g. 127.0.0.1:8080) instead of stdio: Streamable HTTP at /mcp, SSE at /sse, /healthz")
	if v, ok := env("GEMINI_MCP_TOKENS"); ok {
		c.Tokens = splitList(v)
		if len(c.Tokens) == 0 {
			// Serving without auth because a list came out blank would be
			// a silent downgrade: refuse, as a token file without tokens.
			envErrs = append(envErrs, fmt.Errorf("GEMINI_MCP_TOKENS holds no token (%q): set comma-separated tokens of at least 16 characters, or unset it", v))
		}
	}
	str(&c.TokenFile, "token-file", "GEMINI_MCP_TOKEN_FILE", "", "file of accepted bearer tokens for HTTP, one per line; GEMINI_MCP_TOKENS takes a comma-separated list")
	list(&c.AllowedOrigins, "allowed-origins", "GEMINI_MCP_ALLOWED_ORIGINS", "browser origins allowed to call the HTTP server besides loopback ones, e.g. https://app.example.com")
	boolean(&c.Stateless, "stateless", "GEMINI_MCP_STATELESS", "serve Streamable HTTP without sessions, for several replicas behind a load balancer (SSE is then off)")
	boolean(&c.AllowInsecureRemote, "allow-insecure-remote", "GEMINI_MCP_ALLOW_INSECURE_REMOTE", "allow --http on a non-loopback address without tokens")
	size(&c.MaxBodyBytes, "max-body-bytes", "GEMINI_MCP_MAX_BODY_BYTES", 0, "largest HTTP request body (default: 4 MiB, or 12 × --max-prompt-bytes + 64 KiB if more: a prompt and a system prompt of --max-prompt-bytes each, escaped by JSON at worst 6 ×)")
	intFlag(&c.MaxSessions, "max-sessions", "GEMINI_MCP_MAX_SESSIONS", 1000, "HTTP: most MCP sessions open at once; past it a new session gets 503")
	intFlag(&c.MaxSessionsPerToken, "max-sessions-per-token", "GEMINI_MCP_MAX_SESSIONS_PER_TOKEN", 100, "HTTP: most MCP sessions open at once per bearer token; past it a new session gets 429")
	intFlag(&c.MaxConns, "max-conns", "GEMINI_MCP_MAX_CONNS", 0, "HTTP: most connections held at once; past it a new connection takes the place of the one waiting longest without a request in progress, "+
		"or is closed when all serve requests (default: three quarters of the open-file limit, leaving the rest to the server's own files)")
	intFlag(&c.MaxConnsPerIP, "max-conns-per-ip", "GEMINI_MCP_MAX_CONNS_PER_IP", 256, "HTTP: most connections held at once per client address (IPv6: per /64); past it a new one is closed unanswered, 0 for no limit. "+
		"Behind a reverse proxy every client has the proxy's address: raise it above the proxy's connections or set 0")
	duration(&c.BodyReadTimeout, "body-read-timeout", "GEMINI_MCP_BODY_READ_TIMEOUT", 30*time.Second, "HTTP: a request body must arrive within this time once its headers are accepted, else 408 and the connection is closed")
	list(&c.AllowedRoots, "allowed-roots", "GEMINI_MCP_ALLOWED_ROOTS", "the only directories (and their subdirectories) a call's cwd may be, checked after resolving symlinks (default: over HTTP, --cwd or the server's directory; on stdio, any directory, since the client is the local user); / allows all")
	boolean(&c.ShareSessions, "share-sessions", "GEMINI_MCP_SHARE_SESSIONS", "over HTTP, let every client continue every session: by its id, \"latest\" or an index (default: a client continues only its own sessions, per bearer token when tokens are set, and chat-reply without sessionId means this client's newest)")
	c.SessionIDInText = true
	boolean(&c.SessionIDInText, "session-id-in-text", "GEMINI_MCP_SESSION_ID_IN_TEXT", "end chat and chat-reply results with a second text item \"sessionId: <id> …\", for clients that show the model only the text and not _meta (Claude Code); false leaves the id in _meta only")
	str(&c.Store, "store", "GEMINI_MCP_STORE", "", "where sessions live: sqlite:PATH (the embedded store in that file), memory: (in this process: sessions end when it exits) "+
		"or redis://[:PASSWORD@]HOST:PORT/DB (rediss:// for TLS; REDIS_PASSWORD also sets the password), shared by replicas (default: the embedded store at <state-dir>/sessions.db)")
	str(&c.StorePrefix, "store-prefix", "GEMINI_MCP_STORE_PREFIX", session.DefaultPrefix, "prefix of every key a shared store (Redis) writes, so that several deployments can share one database")
	duration(&c.SessionTTL, "session-ttl", "GEMINI_MCP_SESSION_TTL", session.DefaultTTL, "a session (its record, turns and answer pages) is forgotten this long after its last turn")
	intFlag(&c.MaxTurns, "max-turns", "GEMINI_MCP_MAX_TURNS", session.DefaultMaxTurns, "most turns of one conversation; a reply to a session at the limit is refused, and the caller starts a new session with chat")
	// The expert tools' file context. PROJECT_ROOT is the name the expert
	// tools' specification gives the root, which GEMINI_MCP_PROJECT_ROOT overrides.
	projectRoot, _ := env("PROJECT_ROOT")
	str(&c.ProjectRoot, "project-root", "GEMINI_MCP_PROJECT_ROOT", projectRoot, "expert tools: the directory whose files the files arguments may name, and where their sessions run; "+
		"also PROJECT_ROOT (default: --cwd, else the server's working directory; over HTTP it must lie within --allowed-roots)")
	size(&c.MaxFileBytes, "max-file-bytes", "GEMINI_MCP_MAX_FILE_BYTES", 10<<20, "expert tools: largest file sent to Gemini; a named file over it is refused, a larger file found in a directory is skipped")
	intFlag(&c.MaxFiles, "max-files", "GEMINI_MCP_MAX_FILES", 50, "expert tools: most files sent in one call; more named files are refused, more found in directories are skipped")
	intFlag(&c.MaxContextTokens, "max-context-tokens", "GEMINI_MCP_MAX_CONTEXT_TOKENS", 1_000_000, "expert tools: token budget of the files of one call (estimated at 4 bytes a token); files that do not fit are skipped")
	boolean(&c.SendSecretFiles, "send-secret-files", "GEMINI_MCP_SEND_SECRET_FILES", "expert tools and chat's files: send credential files too (.env, private keys such as id_ed25519, *.pem, .netrc… as docs/expert-tools.md lists), which are otherwise skipped and listed as secret-file; "+
		"the secrets found in what is sent (private key blocks, tokens, password assignments) are withheld either way")
	duration(&c.ExpertTimeout, "expert-timeout", "GEMINI_MCP_EXPERT_TIMEOUT", 300*time.Second, "expert tools: limit of one call, file context and Gemini's turn together, 0 for none")
	if v, ok := env("GEMINI_MCP_RATE_LIMITS"); ok {
		if err := c.RateLimits.Set(v); err != nil {
			envErrs = append(envErrs, fmt.Errorf("GEMINI_MCP_RATE_LIMITS: %w", err))
		}
	}
	fs.Var(&c.RateLimits, "rate-limits", ratelimit.RateLimitsUsage+" (GEMINI_MCP_RATE_LIMITS)")
	level := "info"
	if v, ok := env("GEMINI_MCP_LOG_LEVEL"); ok {
		level = v
	}
	fs.StringVar(&level, "log-level", level, "log level on stderr: debug, info, warn or error (GEMINI_MCP_LOG_LEVEL)")
	fs.BoolVar(&c.ShowVersion, "version", false, "print the version and exit")
	fs.Usage = func() {}

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
	if err := c.LogLevel.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %q is not one of debug, info, warn, error", level)
	}
	return c, c.validate()
}

func (c *Config) validate() error {
	if c.ApprovalMode != "" && !contains(ApprovalModes, c.ApprovalMode) {
		return fmt.Errorf("--approval-mode: %q is not one of %s", c.ApprovalMode, strings.Join(ApprovalModes, ", "))
	}
	for _, l := range []struct {
		name string
		vals []string
	}{{"--include-directories", c.IncludeDirectories}, {"--extensions", c.Extensions}, {"--allowed-mcp-server-names", c.AllowedMCPServerNames}} {
		for _, v := range l.vals {
			if strings.HasPrefix(v, "-") || strings.ContainsAny(v, "\x00\n") {
				return fmt.Errorf("%s: invalid value %q", l.name, v)
			}
		}
	}
	if c.Timeout < 0 {
		return errors.New("--timeout must not be negative")
	}
	if c.MaxConcurrent < 1 || c.MaxConcurrent > 1024 {
		return fmt.Errorf("--max-concurrent must be between 1 and 1024, not %d", c.MaxConcurrent)
	}
	if c.ProgressInterval < 100*time.Millisecond {
		return errors.New("--progress-interval must be at least 100ms")
	}
	if c.MaxPromptBytes <= 0 || c.MaxOutputBytes <= 0 || c.MaxAnswerBytes < 1000 {
		return errors.New("--max-prompt-bytes and --max-output-bytes must be positive, --max-answer-bytes at least 1000")
	}
	if c.MaxToolRounds < 1 || c.MaxToolRounds > 1000 {
		return fmt.Errorf("--max-tool-rounds must be between 1 and 1000, not %d", c.MaxToolRounds)
	}
	for _, v := range c.AllowMCPTools {
		if strings.ContainsAny(v, " \t\x00\n") || strings.HasPrefix(v, ".") || strings.HasSuffix(v, ".") {
			return fmt.Errorf("--allow-mcp-tools: %q is not a server name or server.tool", v)
		}
	}
	if c.MaxFileBytes < 1 || c.MaxFiles < 1 || c.MaxContextTokens < 1 {
		return errors.New("--max-file-bytes, --max-files and --max-context-tokens must be at least 1")
	}
	if c.ExpertTimeout < 0 {
		return errors.New("--expert-timeout must not be negative (0 for no limit)")
	}
	if c.MaxSessions < 1 || c.MaxSessionsPerToken < 1 {
		return errors.New("--max-sessions and --max-sessions-per-token must be at least 1")
	}
	if c.BodyReadTimeout <= 0 {
		return errors.New("--body-read-timeout must be positive, e.g. 30s")
	}
	if c.MaxConns < 0 || c.MaxConnsPerIP < 0 {
		return errors.New("--max-conns and --max-conns-per-ip must not be negative (--max-conns 0: three quarters of the open-file limit; --max-conns-per-ip 0: no limit)")
	}
	if need := BodyBytesFor(c.MaxPromptBytes); c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = max(4<<20, need)
	} else if c.MaxBodyBytes < need {
		c.Warnings = append(c.Warnings, fmt.Sprintf("--max-body-bytes %d is below the %d bytes a call with a prompt and a system prompt of --max-prompt-bytes can take once JSON-escaped: "+
			"such calls get HTTP 413; raise --max-body-bytes or leave it unset to size it from --max-prompt-bytes", c.MaxBodyBytes, need))
	}
	for _, t := range c.Tokens {
		if len(t) < 16 {
			return errors.New("GEMINI_MCP_TOKENS: every token must be at least 16 characters")
		}
	}
	if !isBackend(c.Backend) {
		return fmt.Errorf("--backend: %q is not auto, warm, oneshot or api", c.Backend)
	}
	if c.WarmProcesses < 1 || c.WarmProcesses > 64 || c.WarmMaxPrompts < 1 {
		return errors.New("--warm-processes must be 1 to 64, --warm-max-prompts at least 1")
	}
	if c.WarmMaxSessions < 1 || c.WarmSpareAge < 0 {
		return errors.New("--warm-max-sessions must be at least 1, --warm-spare-age 0 (no spare sessions) or more")
	}
	if c.Model != "" {
		if err := validate.Model(c.Model); err != nil {
			return fmt.Errorf("--model: %w", err)
		}
	}
	if c.Gemini == "" {
		return errors.New("--gemini must not be empty")
	}
	return c.validateStore()
}

// validateStore checks the flags of the session store. Which kinds of
// store exist is the app's to say (it opens them); here only the form.
func (c *Config) validateStore() error {
	if c.Store != "" && !strings.Contains(c.Store, ":") {
		return fmt.Errorf("--store: %q names no kind of store: use sqlite:PATH, memory: or redis://HOST:PORT/DB, or leave it unset for the embedded store in --state-dir", c.Store)
	}
	if c.StorePrefix == "" || strings.ContainsFunc(c.StorePrefix, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
		return fmt.Errorf("--store-prefix: %q must be non-empty, without spaces or control characters (the default is %q)", c.StorePrefix, session.DefaultPrefix)
	}
	if c.SessionTTL < time.Minute {
		return fmt.Errorf("--session-ttl must be at least 1m, not %v: it is how long a session lives after its last turn (the default is %v)", c.SessionTTL, session.DefaultTTL)
	}
	if c.MaxTurns < 1 {
		return fmt.Errorf("--max-turns must be at least 1, not %d (the default is %d)", c.MaxTurns, session.DefaultMaxTurns)
	}
	return nil
}

// withoutKey hides one variable from getenv.
func withoutKey(getenv func(string) string, key string) func(string) string {
	return func(k string) string {
		if k == key {
			return ""
		}
		return getenv(k)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func parseBool(v string) (bool, error) {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true, nil
	case "0", "false", "no", "off":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean (true or false)", v)
}

// parseDuration accepts Go durations (90s, 5m) and plain seconds (300).
func parseDuration(v string) (time.Duration, error) {
	if n, err := strconv.ParseFloat(v, 64); err == nil {
		if n < 0 || n > 1e6 {
			return 0, fmt.Errorf("%q is out of range", v)
		}
		return time.Duration(n * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 300s or 10m", v)
	}
	return d, nil
}

// parseSize accepts bytes with an optional KiB/MiB/GiB (or K/M/G) suffix.
func parseSize(v string) (int, error) {
	s := strings.ToUpper(strings.TrimSpace(v))
	mult := 1
	for _, u := range []struct {
		suffix string
		m      int
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"GIB", 1 << 30}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.m
			break
		}
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > (1<<40)/mult {
		return 0, fmt.Errorf("%q is not a positive size such as 1048576 or 1MiB", v)
	}
	return n * mult, nil
}

type listValue struct {
	p       *[]string
	fromEnv bool
}

func (l *listValue) String() string {
	if l == nil || l.p == nil {
		return ""
	}
	return strings.Join(*l.p, ",")
}

func (l *listValue) Set(v string) error {
	if l.fromEnv {
		// A flag replaces the environment's list rather than adding to it.
		*l.p, l.fromEnv = nil, false
	}
	*l.p = append(*l.p, splitList(v)...)
	return nil
}

type durationValue struct{ p *time.Duration }

func (d *durationValue) String() string {
	if d == nil || d.p == nil {
		return ""
	}
	// 5m rather than 5m0s in --help.
	s := d.p.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func (d *durationValue) Set(v string) error {
	x, err := parseDuration(v)
	if err != nil {
		return err
	}
	*d.p = x
	return nil
}

type sizeValue struct{ p *int }

// String is the default shown by --help: a zero size is left out (its
// usage says what the default is), others read in KiB, MiB or GiB when
// they are whole multiples.
func (s *sizeValue) String() string {
	if s == nil || s.p == nil || *s.p == 0 {
		return ""
	}
	return FormatSize(*s.p)
}

// FormatSize writes n bytes the way parseSize reads them: 1MiB, 700MiB,
// 60000.
func FormatSize(n int) string {
	for _, u := range []struct {
		suffix string
		m      int
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.m && n%u.m == 0 {
			return strconv.Itoa(n/u.m) + u.suffix
		}
	}
	return strconv.Itoa(n)
}

func (s *sizeValue) Set(v string) error {
	n, err := parseSize(v)
	if err != nil {
		return err
	}
	*s.p = n
	return nil
}

// isBackend reports whether v names a backend --backend accepts.
func isBackend(v string) bool {
	return v == "auto" || v == "warm" || v == "oneshot" || v == "api"
}

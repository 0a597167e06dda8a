package config

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// flags is the table of settings: each flag's name, environment
// variable, default, help and the field it fills, in the order their
// variables are read (and their errors reported). --help, the defaults
// and docs/configuration.md (checked by the docs' tests) all come from it.
var flags = []spec{
	str("gemini", "GEMINI_MCP_GEMINI", DefaultGemini, "the Gemini CLI executable: a name looked up in PATH, or a path",
		func(c *Config) *string { return &c.CLI.Gemini }),
	str("model", "GEMINI_MCP_MODEL", "", "model for calls that name none (e.g. gemini-2.5-flash); saves the CLI's model-router round trip but turns off its automatic choice (default: the CLI decides; the api backend uses flash, the newest stable Flash model in the Gemini API's model list)",
		func(c *Config) *string { return &c.Turns.Model }),
	str("fallback-model", "GEMINI_MCP_FALLBACK_MODEL", "", "api backend: model (or alias, e.g. flash) that answers a call, once, when the asked model's quota is exhausted (a daily quota, or a wait longer than the call allows); the result's _meta.fallbackFrom names the asked model (default: none, the call fails); the CLI backends ignore it",
		func(c *Config) *string { return &c.API.FallbackModel }),
	str("state-dir", "GEMINI_MCP_STATE_DIR", "", "where session records are kept (default: $XDG_STATE_HOME/gemini-mcp-server, ~/.local/state/gemini-mcp-server, or the user config directory on macOS and Windows)",
		func(c *Config) *string { return &c.Store.StateDir }),
	str("cwd", "GEMINI_MCP_CWD", "", "working directory for calls that give no cwd (default: the server's own)",
		func(c *Config) *string { return &c.Tools.Cwd }),
	str("approval-mode", "GEMINI_MCP_APPROVAL_MODE", "", "the CLI's --approval-mode for every call: default, auto_edit, yolo or plan (default: not passed, so the CLI's headless default applies: tools that need approval are refused)",
		func(c *Config) *string { return &c.CLI.ApprovalMode }),
	boolean("sandbox", "GEMINI_MCP_SANDBOX", false, "run the CLI's tools in its sandbox (--sandbox)",
		func(c *Config) *bool { return &c.CLI.Sandbox }),
	boolean("skip-trust", "GEMINI_MCP_SKIP_TRUST", false, "trust every working directory for the call (--skip-trust) instead of failing on untrusted folders",
		func(c *Config) *bool { return &c.CLI.SkipTrust }),
	list("include-directories", "GEMINI_MCP_INCLUDE_DIRECTORIES", "extra directories the CLI may read (--include-directories)",
		func(c *Config) *[]string { return &c.CLI.IncludeDirectories }),
	list("extensions", "GEMINI_MCP_EXTENSIONS", "the only CLI extensions to load, or none (--extensions)",
		func(c *Config) *[]string { return &c.CLI.Extensions }),
	list("allowed-mcp-server-names", "GEMINI_MCP_ALLOWED_MCP_SERVER_NAMES", "the only MCP servers the CLI may use (--allowed-mcp-server-names)",
		func(c *Config) *[]string { return &c.CLI.AllowedMCPServerNames }),
	str("mcp-config", "GEMINI_MCP_CONFIG", "", "API backend: a JSON `file` of mcpServers in the Gemini CLI's format (a settings.json will do) whose tools Gemini may call; the CLI backends ignore it, as the Gemini CLI reads its own mcpServers from ~/.gemini/settings.json",
		func(c *Config) *string { return &c.API.MCPConfig }),
	str("mcp-client-metadata-url", "GEMINI_MCP_CLIENT_METADATA_URL", "", "API backend, mcp auth: the https `URL` of a Client ID Metadata Document that describes this host as an OAuth client, used as its client ID by authorization servers that accept one (otherwise the host registers itself)",
		func(c *Config) *string { return &c.API.MCPClientMetadataURL }),
	boolean("allow-nested", "GEMINI_MCP_ALLOW_NESTED", false, "serve the tools also when started by one of this server's own Gemini CLI processes (by default such a copy serves none, so that a chat cannot call itself)",
		func(c *Config) *bool { return &c.CLI.AllowNested }),
	duration("timeout", "GEMINI_MCP_TIMEOUT", DefaultTimeout, "per-call limit, 0 for none",
		func(c *Config) *time.Duration { return &c.Turns.Timeout }),
	duration("progress-interval", "GEMINI_MCP_PROGRESS_INTERVAL", DefaultProgressInterval, "how often a running call reports progress to clients that ask for it",
		func(c *Config) *time.Duration { return &c.Tools.ProgressInterval }),
	duration("job-after", "GEMINI_MCP_JOB_AFTER", 0, "hand a call of chat, chat-reply, thinkdeep, analyze or debug still running after this long over to a background job: "+
		"the call answers with the job's id, as with background: true, the same turn goes on, and the job tool returns its result; set it under the clients' own limit (Codex gives up at 60s), 0 for never",
		func(c *Config) *time.Duration { return &c.Tools.JobAfter }),
	integer("max-concurrent", "GEMINI_MCP_MAX_CONCURRENT", DefaultMaxConcurrent, "most gemini processes at once; further calls wait in arrival order",
		func(c *Config) *int { return &c.Turns.MaxConcurrent }),
	size("max-prompt-bytes", "GEMINI_MCP_MAX_PROMPT_BYTES", DefaultMaxPromptBytes, "largest prompt or system prompt accepted",
		func(c *Config) *int { return &c.Tools.MaxPromptBytes }),
	size("max-output-bytes", "GEMINI_MCP_MAX_OUTPUT_BYTES", DefaultMaxOutputBytes, "largest output read from gemini (the CLI's, or all the API's streamed answers of a turn) before a call is stopped",
		func(c *Config) *int { return &c.Turns.MaxOutputBytes }),
	size("max-answer-bytes", "GEMINI_MCP_MAX_ANSWER_BYTES", DefaultMaxAnswerBytes, "largest answer returned in one result; longer answers come in pages fetched with the chat-page tool",
		func(c *Config) *int { return &c.Tools.MaxAnswerBytes }),
	str("backend", "GEMINI_MCP_BACKEND", string(DefaultBackend), "how calls run: auto (warm when a gemini executable is found, else api when API or Vertex AI credentials are set), "+
		"warm (a pool of long-lived gemini --acp processes, milliseconds per call; calls it cannot serve run one-shot), oneshot (a gemini process per call) "+
		"or api (the Gemini API itself, no Node; GEMINI_API_KEY, GOOGLE_API_KEY or Vertex AI)",
		func(c *Config) *string { return (*string)(&c.Backend) }).
		foreignEnv(func(v string) string {
			if Backend(v).valid() {
				return ""
			}
			// gemini-mcp-tool, another MCP server, reads the same variable
			// (with values such as "gemini"): a shared environment must not
			// stop this server from starting.
			return fmt.Sprintf("ignoring GEMINI_MCP_BACKEND=%q: this server's backends are auto, warm, oneshot and api (the variable may be meant for gemini-mcp-tool); using auto", v)
		}),
	integer("warm-processes", "GEMINI_MCP_WARM_PROCESSES", DefaultWarmProcesses, "warm backend: most gemini --acp processes (about 220 MB each)",
		func(c *Config) *int { return &c.Warm.Processes }),
	integer("warm-max-prompts", "GEMINI_MCP_WARM_MAX_PROMPTS", DefaultWarmMaxPrompts, "warm backend: recycle a process after this many prompts",
		func(c *Config) *int { return &c.Warm.MaxPrompts }),
	duration("warm-idle-timeout", "GEMINI_MCP_WARM_IDLE_TIMEOUT", DefaultWarmIdleTimeout, "warm backend: stop a process idle this long, giving its memory back",
		func(c *Config) *time.Duration { return &c.Warm.IdleTimeout }),
	duration("warm-spare-age", "GEMINI_MCP_WARM_SPARE_AGE", DefaultWarmSpareAge, "warm backend: keep a session made ahead of time per process and folder, used by a new chat within this age (its date and folder listing are as of its creation), 0 for none",
		func(c *Config) *time.Duration { return &c.Warm.SpareAge }),
	boolean("warm-on-connect", "GEMINI_MCP_WARM_ON_CONNECT", true, "warm backend: start a gemini --acp process and its spare session when a client connects (at its first tools/list), so that its first chat finds them ready; false waits for the first chat",
		func(c *Config) *bool { return &c.Warm.OnConnect }),
	integer("warm-spares", "GEMINI_MCP_WARM_SPARES", DefaultWarmSpares, "warm backend: spare sessions each process keeps per folder, made one at a time across the processes, for new chats that come in a row",
		func(c *Config) *int { return &c.Warm.Spares }),
	integer("warm-max-sessions", "GEMINI_MCP_WARM_MAX_SESSIONS", DefaultWarmMaxSessions, "warm backend: recycle a process holding more sessions than this (each new session costs more in a process holding many)",
		func(c *Config) *int { return &c.Warm.MaxSessions }),
	size("max-inline-bytes", "GEMINI_MCP_MAX_INLINE_BYTES", DefaultMaxInlineBytes, "api backend: largest request with media sent inline (the Gemini API's limit of a request); media files that do not fit are uploaded through the Files API, once per content, and deleted with their session",
		func(c *Config) *int { return &c.API.MaxInlineBytes }),
	duration("cache-ttl", "GEMINI_MCP_CACHE_TTL", DefaultCacheTTL, "api backend: keep a conversation's file context (expert tools, chat's files) in a Gemini API context cache this long after its last use, when it is over the model's minimum (1,024 tokens for Flash, 4,096 for Pro); cached tokens are billed at the API's lower rate; 0 for none",
		func(c *Config) *time.Duration { return &c.API.CacheTTL }),
	boolean("api-server-history", "GEMINI_MCP_API_SERVER_HISTORY", false, "api backend: continue a conversation of plain text turns on the Gemini Interactions API by its last stored interaction (previous_interaction_id), sending only the new turn, rather than resending the whole conversation; Google then keeps the conversation for its retention period; the session store stays its record, resent when the stored interaction is gone",
		func(c *Config) *bool { return &c.API.ServerHistory }),
	duration("file-search-ttl", "GEMINI_MCP_FILE_SEARCH_TTL", DefaultFileSearchTTL, "api backend: delete a caller's File Search store of the project root (the tools' file_search) this long after its last use; indexing is billed per token on upload, so a store kept is not paid for again",
		func(c *Config) *time.Duration { return &c.API.FileSearchTTL }),
	integer("max-tool-rounds", "GEMINI_MCP_MAX_TOOL_ROUNDS", DefaultMaxToolRounds, "api backend: most rounds of downstream MCP tool calls in one turn; after the last, Gemini is asked for its answer without more",
		func(c *Config) *int { return &c.API.MaxToolRounds }),
	list("allow-mcp-tools", "GEMINI_MCP_ALLOW_MCP_TOOLS", "api backend: untrusted downstream MCP tools that run without asking the user, as server (all its tools) or server.tool; "+
		"others run once the user allows them through MCP elicitation, and are refused when the client cannot be asked",
		func(c *Config) *[]string { return &c.API.AllowMCPTools }),
	size("warm-max-rss", "GEMINI_MCP_WARM_MAX_RSS", DefaultWarmMaxRSS, "warm backend: recycle a process past this resident memory (e.g. 700MiB)",
		func(c *Config) *int { return &c.Warm.MaxRSSBytes }),
	str("http", "GEMINI_MCP_HTTP", "", "serve MCP over HTTP on this address (e.g. 127.0.0.1:8080) instead of stdio: Streamable HTTP at /mcp, SSE at /sse, /healthz",
		func(c *Config) *string { return &c.HTTP.Addr }),
	// The tokens have a variable and no flag: a flag's value would show
	// in the process list.
	list("", "GEMINI_MCP_TOKENS", "",
		func(c *Config) *[]string { return &c.HTTP.Tokens }).
		checkEnv(func(v string) error {
			if len(splitList(v)) == 0 {
				// Serving without auth because a list came out blank would be
				// a silent downgrade: refuse, as a token file without tokens.
				return fmt.Errorf("GEMINI_MCP_TOKENS holds no token (%q): set comma-separated tokens of at least 16 characters, or unset it", v)
			}
			return nil
		}),
	str("token-file", "GEMINI_MCP_TOKEN_FILE", "", "file of accepted bearer tokens for HTTP, one per line; GEMINI_MCP_TOKENS takes a comma-separated list",
		func(c *Config) *string { return &c.HTTP.TokenFile }),
	list("allowed-origins", "GEMINI_MCP_ALLOWED_ORIGINS", "browser origins allowed to call the HTTP server besides loopback ones, e.g. https://app.example.com",
		func(c *Config) *[]string { return &c.HTTP.AllowedOrigins }),
	list("auth-issuer", "GEMINI_MCP_AUTH_ISSUER", "HTTP: OAuth issuers (authorization server URLs) whose JWT access tokens are accepted besides the static tokens; "+
		"their metadata and keys are discovered from the URL",
		func(c *Config) *[]string { return &c.HTTP.AuthIssuers }),
	str("auth-audience", "GEMINI_MCP_AUTH_AUDIENCE", "", "HTTP with --auth-issuer: this server's resource URI, which a token's aud must hold, as clients reach it, e.g. https://mcp.example.com/mcp "+
		"(default: http://ADDRESS/mcp from --http, allowed only on a loopback address)",
		func(c *Config) *string { return &c.HTTP.AuthAudience }),
	list("auth-accept-audiences", "GEMINI_MCP_AUTH_ACCEPT_AUDIENCES", "HTTP with --auth-issuer: other aud values a token may carry instead of the resource URI, "+
		"such as the API's client id in Microsoft Entra ID v2.0 tokens",
		func(c *Config) *[]string { return &c.HTTP.AuthAcceptAudiences }),
	listDefault("auth-scopes", "GEMINI_MCP_AUTH_SCOPES", DefaultAuthScopes, "HTTP with --auth-issuer: the scopes an access token must hold",
		func(c *Config) *[]string { return &c.HTTP.AuthScopes }),
	str("auth-introspection-url", "GEMINI_MCP_AUTH_INTROSPECTION_URL", "", "HTTP with --auth-issuer: the authorization server's token introspection endpoint (RFC 7662), where access tokens that are not JWTs are checked; "+
		"needs --auth-client-id and GEMINI_MCP_AUTH_CLIENT_SECRET (default: such tokens are refused)",
		func(c *Config) *string { return &c.HTTP.AuthIntrospectionURL }),
	str("auth-client-id", "GEMINI_MCP_AUTH_CLIENT_ID", "", "HTTP with --auth-introspection-url: the client id this server authenticates to the introspection endpoint with",
		func(c *Config) *string { return &c.HTTP.AuthClientID }),
	// The secret has a variable and no flag: a flag's value would show in
	// the process list.
	str("", "GEMINI_MCP_AUTH_CLIENT_SECRET", "", "",
		func(c *Config) *string { return &c.HTTP.AuthClientSecret }),
	boolean("stateless", "GEMINI_MCP_STATELESS", false, "serve Streamable HTTP without sessions, for several replicas behind a load balancer (SSE is then off)",
		func(c *Config) *bool { return &c.HTTP.Stateless }),
	str("metrics", "GEMINI_MCP_METRICS", "", "serve Prometheus metrics at /metrics: on (on the --http listener, behind its authentication), "+
		"or an address of its own such as 127.0.0.1:9464 (no authentication; loopback only unless --metrics-allow-remote) (default: off)",
		func(c *Config) *string { return &c.HTTP.Metrics }),
	boolean("metrics-allow-remote", "GEMINI_MCP_METRICS_ALLOW_REMOTE", false, "allow --metrics on a non-loopback address (its /metrics has no authentication)",
		func(c *Config) *bool { return &c.HTTP.MetricsAllowRemote }),
	boolean("allow-insecure-remote", "GEMINI_MCP_ALLOW_INSECURE_REMOTE", false, "allow --http on a non-loopback address without tokens",
		func(c *Config) *bool { return &c.HTTP.AllowInsecureRemote }),
	size("max-body-bytes", "GEMINI_MCP_MAX_BODY_BYTES", 0, "largest HTTP request body (default: 4 MiB, or 12 × --max-prompt-bytes + 64 KiB if more: a prompt and a system prompt of --max-prompt-bytes each, escaped by JSON at worst 6 ×)",
		func(c *Config) *int { return &c.HTTP.MaxBodyBytes }),
	integer("max-sessions", "GEMINI_MCP_MAX_SESSIONS", DefaultMaxSessions, "HTTP: most MCP sessions open at once; past it a new session gets 503",
		func(c *Config) *int { return &c.HTTP.MaxSessions }),
	integer("max-sessions-per-token", "GEMINI_MCP_MAX_SESSIONS_PER_TOKEN", DefaultMaxSessionsPerToken, "HTTP: most MCP sessions open at once per bearer token; past it a new session gets 429",
		func(c *Config) *int { return &c.HTTP.MaxSessionsPerToken }),
	integer("max-conns", "GEMINI_MCP_MAX_CONNS", 0, "HTTP: most connections held at once; past it a new connection takes the place of the one waiting longest without a request in progress, "+
		"or is closed when all serve requests (default: three quarters of the open-file limit, leaving the rest to the server's own files)",
		func(c *Config) *int { return &c.HTTP.MaxConns }),
	integer("max-conns-per-ip", "GEMINI_MCP_MAX_CONNS_PER_IP", DefaultMaxConnsPerIP, "HTTP: most connections held at once per client address (IPv6: per /64); past it a new one is closed unanswered, 0 for no limit. "+
		"Behind a reverse proxy every client has the proxy's address: raise it above the proxy's connections or set 0",
		func(c *Config) *int { return &c.HTTP.MaxConnsPerIP }),
	duration("body-read-timeout", "GEMINI_MCP_BODY_READ_TIMEOUT", DefaultBodyReadTimeout, "HTTP: a request body must arrive within this time once its headers are accepted, else 408 and the connection is closed",
		func(c *Config) *time.Duration { return &c.HTTP.BodyReadTimeout }),
	duration("drain-delay", "GEMINI_MCP_DRAIN_DELAY", DefaultDrainDelay, "HTTP: at SIGTERM, /readyz answers 503 at once and the server keeps taking sessions and calls this long, so that load balancers stop sending first; 0 refuses them at once",
		func(c *Config) *time.Duration { return &c.HTTP.DrainDelay }),
	duration("drain-timeout", "GEMINI_MCP_DRAIN_TIMEOUT", DefaultDrainTimeout, "HTTP: after the drain delay, new sessions and calls are refused (503, retryable) and the calls in flight get this long to finish before they are cancelled",
		func(c *Config) *time.Duration { return &c.HTTP.DrainTimeout }),
	list("allowed-roots", "GEMINI_MCP_ALLOWED_ROOTS", "the only directories (and their subdirectories) a call's cwd may be, checked after resolving symlinks (default: over HTTP, --cwd or the server's directory; on stdio, any directory, since the client is the local user); / allows all",
		func(c *Config) *[]string { return &c.Tools.AllowedRoots }),
	boolean("share-sessions", "GEMINI_MCP_SHARE_SESSIONS", false, "over HTTP, let every client continue every session: by its id, \"latest\" or an index (default: a client continues only its own sessions, per bearer token when tokens are set, and chat-reply without sessionId means this client's newest)",
		func(c *Config) *bool { return &c.Tools.ShareSessions }),
	boolean("session-id-in-text", "GEMINI_MCP_SESSION_ID_IN_TEXT", true, "end chat and chat-reply results with a second text item \"sessionId: <id> …\", for clients that show the model only the text and not _meta (Claude Code); false leaves the id in _meta only",
		func(c *Config) *bool { return &c.Tools.SessionIDInText }),
	str("store", "GEMINI_MCP_STORE", "", "where sessions live: sqlite:PATH (the embedded store in that file), memory: (in this process: sessions end when it exits) "+
		"or Redis, shared by replicas: redis://[:PASSWORD@]HOST:PORT/DB, a Redis Cluster redis+cluster://[:PASSWORD@]HOST:PORT,HOST:PORT,… "+
		"or the master that sentinels name redis+sentinel://[:PASSWORD@]HOST:PORT,…/MASTER[?db=N] (rediss… for TLS; REDIS_PASSWORD also sets the password) "+
		"(default: the embedded store at <state-dir>/sessions.db)",
		func(c *Config) *string { return &c.Store.URL }),
	str("store-prefix", "GEMINI_MCP_STORE_PREFIX", DefaultStorePrefix, "prefix of every key a shared store (Redis) writes, so that several deployments can share one database",
		func(c *Config) *string { return &c.Store.Prefix }),
	duration("session-ttl", "GEMINI_MCP_SESSION_TTL", DefaultSessionTTL, "a session (its record, turns and answer pages) is forgotten this long after its last turn",
		func(c *Config) *time.Duration { return &c.Store.TTL }),
	integer("max-turns", "GEMINI_MCP_MAX_TURNS", DefaultMaxTurns, "most turns of one conversation; a reply to a session at the limit is refused, and the caller starts a new session with chat",
		func(c *Config) *int { return &c.Store.MaxTurns }),
	// PROJECT_ROOT is the name the expert tools' specification gives the
	// root, which GEMINI_MCP_PROJECT_ROOT overrides.
	str("project-root", "GEMINI_MCP_PROJECT_ROOT", "", "expert tools: the directory whose files the files arguments may name, and where their sessions run; "+
		"also PROJECT_ROOT (default: --cwd, else the server's working directory; over HTTP it must lie within --allowed-roots)",
		func(c *Config) *string { return &c.Expert.ProjectRoot }).
		defaultFrom("PROJECT_ROOT"),
	size("max-file-bytes", "GEMINI_MCP_MAX_FILE_BYTES", DefaultMaxFileBytes, "expert tools: largest file sent to Gemini; a named file over it is refused, a larger file found in a directory is skipped",
		func(c *Config) *int { return &c.Expert.MaxFileBytes }),
	size("max-media-bytes", "GEMINI_MCP_MAX_MEDIA_BYTES", DefaultMaxMediaBytes, "api backend: the images, PDFs, audio and video files named in one call together (told by their content, sent to Gemini as media); more is refused",
		func(c *Config) *int { return &c.Expert.MaxMediaBytes }),
	integer("max-files", "GEMINI_MCP_MAX_FILES", DefaultMaxFiles, "expert tools: most files sent in one call; more named files are refused, more found in directories are skipped",
		func(c *Config) *int { return &c.Expert.MaxFiles }),
	integer("max-context-tokens", "GEMINI_MCP_MAX_CONTEXT_TOKENS", DefaultMaxContextTokens, "expert tools: token budget of the files of one call (estimated at 4 bytes a token); files that do not fit are skipped",
		func(c *Config) *int { return &c.Expert.MaxContextTokens }),
	boolean("send-secret-files", "GEMINI_MCP_SEND_SECRET_FILES", false, "expert tools and chat's files: send credential files too (.env, private keys such as id_ed25519, *.pem, .netrc… as docs/expert-tools.md lists), which are otherwise skipped and listed as secret-file; "+
		"the secrets found in what is sent (private key blocks, tokens, password assignments) are withheld either way",
		func(c *Config) *bool { return &c.Expert.SendSecretFiles }),
	boolean("precommit-any-owner", "GEMINI_MCP_PRECOMMIT_ANY_OWNER", false, "precommit: read a git repository whose work tree, git directory or common directory another user owns; "+
		"off, such a repository is refused as git refuses it (\"dubious ownership\"), since its owner could change it while it is read",
		func(c *Config) *bool { return &c.Expert.PrecommitAnyOwner }),
	duration("expert-timeout", "GEMINI_MCP_EXPERT_TIMEOUT", DefaultExpertTimeout, "expert tools: limit of one call, file context and Gemini's turn together, 0 for none",
		func(c *Config) *time.Duration { return &c.Expert.Timeout }),
	str("tools", "GEMINI_MCP_TOOLS", DefaultToolset, toolsUsage,
		func(c *Config) *string { return &c.Tools.Toolset }),
	rates("rate-limits", "GEMINI_MCP_RATE_LIMITS", rateLimitsUsage,
		func(c *Config) *RateLimits { return &c.Tools.RateLimits }),
	str("log-level", "GEMINI_MCP_LOG_LEVEL", DefaultLogLevel, "log level on stderr: debug, info, warn or error",
		func(c *Config) *string { return &c.logLevel }),
	boolean("version", "", false, "print the version and exit",
		func(c *Config) *bool { return &c.ShowVersion }),
}

// kind is how a flag's value is written.
type kind int

const (
	kindString kind = iota
	kindBool
	kindInt
	kindSize     // bytes, with an optional KiB, MiB or GiB suffix
	kindDuration // a Go duration or seconds
	kindList     // comma-separated or repeated
	kindRates    // --rate-limits
)

// spec is one setting: its flag (name "" for a variable alone), its
// variable ("" for a flag alone), default, help and the field it fills.
type spec struct {
	name, env string
	kind      kind
	def       any // string, bool, int or time.Duration, as kind says; nil for lists and rates
	help      string
	field     func(*Config) any

	envDefault string                // a variable whose value, when set, replaces def
	foreign    func(v string) string // a warning when the variable's value is not for this server, which then ignores it
	check      func(v string) error  // checks the variable's value before it is read
}

func str(name, env, def, help string, f func(*Config) *string) spec {
	return spec{name: name, env: env, kind: kindString, def: def, help: help, field: func(c *Config) any { return f(c) }}
}

func boolean(name, env string, def bool, help string, f func(*Config) *bool) spec {
	return spec{name: name, env: env, kind: kindBool, def: def, help: help, field: func(c *Config) any { return f(c) }}
}

func integer(name, env string, def int, help string, f func(*Config) *int) spec {
	return spec{name: name, env: env, kind: kindInt, def: def, help: help, field: func(c *Config) any { return f(c) }}
}

func size(name, env string, def int, help string, f func(*Config) *int) spec {
	return spec{name: name, env: env, kind: kindSize, def: def, help: help, field: func(c *Config) any { return f(c) }}
}

func duration(name, env string, def time.Duration, help string, f func(*Config) *time.Duration) spec {
	return spec{name: name, env: env, kind: kindDuration, def: def, help: help, field: func(c *Config) any { return f(c) }}
}

func list(name, env, help string, f func(*Config) *[]string) spec {
	return spec{name: name, env: env, kind: kindList, help: help, field: func(c *Config) any { return f(c) }}
}

// listDefault is a list with a default, which a flag or the variable
// replaces.
func listDefault(name, env string, def []string, help string, f func(*Config) *[]string) spec {
	return spec{name: name, env: env, kind: kindList, def: def, help: help, field: func(c *Config) any { return f(c) }}
}

func rates(name, env, help string, f func(*Config) *RateLimits) spec {
	return spec{name: name, env: env, kind: kindRates, help: help, field: func(c *Config) any { return f(c) }}
}

func (s spec) defaultFrom(env string) spec             { s.envDefault = env; return s }
func (s spec) foreignEnv(f func(v string) string) spec { s.foreign = f; return s }
func (s spec) checkEnv(f func(v string) error) spec    { s.check = f; return s }

// usage is the flag's line in --help.
func (s spec) usage() string {
	u := s.help
	switch s.kind {
	case kindList:
		u += "; comma-separated or repeated"
	case kindSize:
		u += "; a `size` in bytes, or with a KiB, MiB or GiB suffix"
	case kindDuration:
		u += "; a `duration` such as 90s or 10m"
	}
	if s.env != "" {
		u += " (" + s.env + ")"
	}
	return u
}

// bind sets s's field to its default, then to its variable's value when
// the variable is set, and defines its flag on fs. A variable that cannot
// be read is an error (the field then holds what could be read); a
// foreign one adds a warning to c.
func (s spec) bind(c *Config, fs *flag.FlagSet, getenv func(string) string) error {
	env := func(key string) (string, bool) {
		if key == "" {
			return "", false
		}
		v := strings.TrimSpace(getenv(key))
		return v, v != ""
	}
	v, set := env(s.env)
	if set && s.foreign != nil {
		if w := s.foreign(v); w != "" {
			c.Warnings = append(c.Warnings, w)
			v, set = "", false
		}
	}
	var err error
	if set && s.check != nil {
		err = s.check(v)
	}
	wrap := func(e error) {
		if e != nil && err == nil {
			err = fmt.Errorf("%s: %w", s.env, e)
		}
	}
	var define func() // defines the flag, once the field holds its default
	switch p := s.field(c).(type) {
	case *string:
		*p = s.def.(string)
		if d, ok := env(s.envDefault); ok {
			*p = d
		}
		if set {
			*p = v
		}
		define = func() { fs.StringVar(p, s.name, *p, s.usage()) }
	case *bool:
		*p = s.def.(bool)
		if set {
			b, e := parseBool(v)
			wrap(e)
			*p = b
		}
		define = func() { fs.BoolVar(p, s.name, *p, s.usage()) }
	case *int:
		*p = s.def.(int)
		if set {
			var n int
			var e error
			if s.kind == kindSize {
				n, e = parseSize(v)
			} else if n, e = strconv.Atoi(v); e != nil {
				e = fmt.Errorf("%q is not a number", v)
			}
			wrap(e)
			*p = n
		}
		define = func() { fs.IntVar(p, s.name, *p, s.usage()) }
		if s.kind == kindSize {
			define = func() { fs.Var(&sizeValue{p: p}, s.name, s.usage()) }
		}
	case *time.Duration:
		*p = s.def.(time.Duration)
		if set {
			d, e := parseDuration(v)
			wrap(e)
			*p = d
		}
		define = func() { fs.Var(&durationValue{p: p}, s.name, s.usage()) }
	case *[]string:
		l := &listValue{p: p}
		if def, ok := s.def.([]string); ok {
			*p, l.fromEnv = append([]string(nil), def...), true
		}
		if set {
			*p, l.fromEnv = splitList(v), true
		}
		define = func() { fs.Var(l, s.name, s.usage()) }
	case *RateLimits:
		if set {
			wrap(p.Set(v))
		}
		define = func() { fs.Var(p, s.name, s.usage()) }
	default:
		panic(fmt.Sprintf("config: --%s fills a %T", s.name, p))
	}
	if s.name != "" {
		define()
	}
	return err
}

// Flag is a flag as --help shows it.
type Flag struct {
	Name    string // without the dashes
	Env     string // its variable, "" for none
	Default string // the default --help shows, "" when it shows none
}

// Flags lists the flags, with their defaults in an environment that
// sets none of the variables.
func Flags() []Flag {
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := &Config{}
	var out []Flag
	for _, s := range flags {
		_ = s.bind(c, fs, func(string) string { return "" })
		if s.name == "" {
			continue
		}
		def := fs.Lookup(s.name).DefValue
		// --help leaves out a default that is the zero value of its kind.
		if def == map[kind]string{kindBool: "false", kindInt: "0"}[s.kind] {
			def = ""
		}
		out = append(out, Flag{Name: s.name, Env: s.env, Default: def})
	}
	return out
}

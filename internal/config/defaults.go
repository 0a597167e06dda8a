package config

import "time"

// The defaults of every setting an operator can make. Each is defined
// here once: the flag table shows it in --help, and a package whose
// options treat a zero value as "the default" reads it from here rather
// than keeping a copy (config imports nothing of this module, so every
// package may). Bounds no flag sets stay in the package they bound.

// DefaultAuthScopes are the scopes an OAuth access token must hold.
var DefaultAuthScopes = []string{"gemini"}

// The defaults of the other settings, by area.
const (
	DefaultGemini  = "gemini"
	DefaultBackend = BackendAuto

	// A turn, on any backend.
	DefaultTimeout        = 300 * time.Second
	DefaultMaxConcurrent  = 4
	DefaultMaxOutputBytes = 32 << 20

	// The tools. MCP clients that reset their timeout on progress (most
	// give up on a silent call after 60 s) need progress well under that.
	// Clients cap tool results (Claude Code near 25,000 tokens, roughly
	// 75–100 KB of text), and a capped result is silently cut: longer
	// answers are paged.
	DefaultProgressInterval = 5 * time.Second
	DefaultMaxPromptBytes   = 1 << 20
	DefaultMaxAnswerBytes   = 60000

	// The warm backend. A process is about 220 MB idle and grows about
	// 0.13 MB per prompt and 0.3 MB per session, never freeing sessions.
	DefaultWarmProcesses   = 2
	DefaultWarmMaxPrompts  = 500
	DefaultWarmMaxRSS      = 700 << 20
	DefaultWarmIdleTimeout = 10 * time.Minute
	DefaultWarmSpareAge    = time.Minute
	DefaultWarmMaxSessions = 100
	DefaultWarmSpares      = 3

	// The API backend as an MCP host: a round is one answer of Gemini's
	// that asks for tool calls (one or several, run in parallel) and the
	// results sent back.
	DefaultMaxToolRounds = 10

	// HTTP. A session costs about 18 KiB while it waits for its idle
	// timeout. An MCP client opens one or two connections per session:
	// the per-address cap is far above that and far below the server's
	// files. A few MiB of body arrive in well under a second on any
	// working link.
	DefaultMaxSessions         = 1000
	DefaultMaxSessionsPerToken = 100
	DefaultMaxConnsPerIP       = 256
	DefaultBodyReadTimeout     = 30 * time.Second
	// Draining at SIGTERM: a balancer checking readiness every few
	// seconds notices a 503 within the delay; delay, timeout and the
	// shutdown's 5 s fit Kubernetes' default 30 s grace period.
	DefaultDrainDelay   = 5 * time.Second
	DefaultDrainTimeout = 20 * time.Second

	// The session store. A session is kept for a week after its last
	// turn: long enough to come back to a thread after a weekend, short
	// enough that the store does not grow without bound.
	DefaultStorePrefix = "gemini-mcp:"
	DefaultSessionTTL  = 7 * 24 * time.Hour
	DefaultMaxTurns    = 200

	// Background jobs. A job is kept a day after its last change, long
	// enough for a client to come back for a research report after its
	// own restart. A live job (queued, working or waiting for input) holds
	// a turn's resources or a backend's interaction: a caller may have a
	// few at once, the server some dozens, far under what a store holds
	// (a job is at most a few MiB, see internal/jobs).
	DefaultJobTTL          = 24 * time.Hour
	DefaultMaxJobsPerOwner = 10
	DefaultMaxJobs         = 100

	// The expert tools' file context: the request limits of the expert
	// tools' specification.
	DefaultMaxFileBytes = 10 << 20
	// DefaultMaxMediaBytes bounds the media files (images, PDFs, audio,
	// video) of one request together, which are read whole.
	DefaultMaxMediaBytes = 100 << 20
	// DefaultMaxInlineBytes is the Gemini API's limit on a request's
	// size, inline data included: media that do not fit go through the
	// Files API.
	DefaultMaxInlineBytes = 20 << 20
	// DefaultCacheTTL keeps a context cache an hour after its last use
	// (the Gemini API's own default TTL).
	DefaultCacheTTL = time.Hour
	// DefaultFileSearchTTL keeps a File Search store a week after its
	// last use: its upload's indexing is what is billed, so a project
	// worked on every few days is not indexed again each time.
	DefaultFileSearchTTL    = 7 * 24 * time.Hour
	DefaultMaxFiles         = 50
	DefaultMaxContextTokens = 1_000_000
	DefaultExpertTimeout    = 300 * time.Second

	DefaultLogLevel = "info"
)

package config

import "time"

// The defaults of every setting an operator can make. Each is defined
// here once: the flag table shows it in --help, and a package whose
// options treat a zero value as "the default" reads it from here rather
// than keeping a copy (config imports nothing of this module, so every
// package may).
const (
	DefaultGemini  = "gemini"
	DefaultBackend = BackendAuto

	// A turn, on any backend.
	DefaultTimeout        = 300 * time.Second
	DefaultMaxConcurrent  = 4
	DefaultMaxOutputBytes = 32 << 20

	// The tools.
	DefaultProgressInterval = 5 * time.Second
	DefaultMaxPromptBytes   = 1 << 20
	DefaultMaxAnswerBytes   = 60000

	// The warm backend.
	DefaultWarmProcesses   = 2
	DefaultWarmMaxPrompts  = 500
	DefaultWarmMaxRSS      = 700 << 20
	DefaultWarmIdleTimeout = 10 * time.Minute
	DefaultWarmSpareAge    = time.Minute
	DefaultWarmMaxSessions = 100

	// The API backend as an MCP host.
	DefaultMaxToolRounds = 10

	// HTTP.
	DefaultMaxSessions         = 1000
	DefaultMaxSessionsPerToken = 100
	DefaultMaxConnsPerIP       = 256
	DefaultBodyReadTimeout     = 30 * time.Second

	// The session store. A session is kept for a week after its last
	// turn: long enough to come back to a thread after a weekend, short
	// enough that the store does not grow without bound.
	DefaultStorePrefix = "gemini-mcp:"
	DefaultSessionTTL  = 7 * 24 * time.Hour
	DefaultMaxTurns    = 200

	// The expert tools' file context.
	DefaultMaxFileBytes     = 10 << 20
	DefaultMaxFiles         = 50
	DefaultMaxContextTokens = 1_000_000
	DefaultExpertTimeout    = 300 * time.Second

	DefaultLogLevel = "info"
)

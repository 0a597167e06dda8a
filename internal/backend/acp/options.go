package acp

import "time"

// WarmOptions configures the warm backend: a small pool of long-lived
// `gemini --acp` processes that answer in milliseconds instead of paying a
// Node start-up per call.
type WarmOptions struct {
	Processes  int   // most processes at once; 0 means DefaultWarmProcesses
	MaxPrompts int   // recycle a process after this many prompts; 0 means DefaultWarmMaxPrompts
	MaxRSS     int64 // recycle a process past this resident size in bytes; 0 means DefaultWarmMaxRSS
	// IdleTimeout stops a process that has served nothing for this long,
	// giving its memory back; 0 means DefaultWarmIdleTimeout.
	IdleTimeout time.Duration
	// SpareAge is how long a spare session (created ahead of time, so that
	// a new chat skips session/new) may wait for its call; its context (the
	// date, the folder listing) is frozen at creation. 0 means
	// DefaultWarmSpareAge; negative turns spares off.
	SpareAge time.Duration
	// MaxSessions recycles a process holding more sessions than this
	// (session/new slows down with every session a process holds); 0 means
	// DefaultWarmMaxSessions.
	MaxSessions int
}

// Defaults of the warm backend. A process is about 220 MB idle and grows
// about 0.13 MB per prompt and 0.3 MB per session, never freeing sessions.
const (
	DefaultWarmProcesses   = 2
	DefaultWarmMaxPrompts  = 500
	DefaultWarmMaxRSS      = 700 << 20
	DefaultWarmIdleTimeout = 10 * time.Minute
	DefaultWarmSpareAge    = time.Minute
	DefaultWarmMaxSessions = 100
)

// withDefaults is o with every unset field at its default.
func (o WarmOptions) withDefaults() WarmOptions {
	if o.Processes <= 0 {
		o.Processes = DefaultWarmProcesses
	}
	if o.MaxPrompts <= 0 {
		o.MaxPrompts = DefaultWarmMaxPrompts
	}
	if o.MaxRSS <= 0 {
		o.MaxRSS = DefaultWarmMaxRSS
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultWarmIdleTimeout
	}
	if o.SpareAge == 0 {
		o.SpareAge = DefaultWarmSpareAge
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = DefaultWarmMaxSessions
	}
	return o
}

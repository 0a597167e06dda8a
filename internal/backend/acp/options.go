package acp

import (
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
)

// WarmOptions configures the warm backend: a small pool of long-lived
// `gemini --acp` processes that answer in milliseconds instead of paying a
// Node start-up per call.
type WarmOptions struct {
	Processes  int   // most processes at once; 0 means config.DefaultWarmProcesses
	MaxPrompts int   // recycle a process after this many prompts; 0 means config.DefaultWarmMaxPrompts
	MaxRSS     int64 // recycle a process past this resident size in bytes; 0 means config.DefaultWarmMaxRSS
	// IdleTimeout stops a process that has served nothing for this long,
	// giving its memory back; 0 means config.DefaultWarmIdleTimeout.
	IdleTimeout time.Duration
	// SpareAge is how long a spare session (created ahead of time, so that
	// a new chat skips session/new) may wait for its call; its context (the
	// date, the folder listing) is frozen at creation. 0 means
	// config.DefaultWarmSpareAge; negative turns spares off.
	SpareAge time.Duration
	// MaxSessions recycles a process holding more sessions than this
	// (session/new slows down with every session a process holds); 0 means
	// config.DefaultWarmMaxSessions.
	MaxSessions int
	// Spares is how many spare sessions each process keeps per folder,
	// made one at a time while it is idle: a burst of new chats uses them
	// up faster than session/new makes them. 0 means
	// config.DefaultWarmSpares.
	Spares int
	// NotOnConnect makes Prepare do nothing: a process starts at the
	// first call instead of when a client connects.
	NotOnConnect bool
}

// withDefaults is o with every unset field at its default.
func (o WarmOptions) withDefaults() WarmOptions {
	if o.Processes <= 0 {
		o.Processes = config.DefaultWarmProcesses
	}
	if o.MaxPrompts <= 0 {
		o.MaxPrompts = config.DefaultWarmMaxPrompts
	}
	if o.MaxRSS <= 0 {
		o.MaxRSS = config.DefaultWarmMaxRSS
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = config.DefaultWarmIdleTimeout
	}
	if o.SpareAge == 0 {
		o.SpareAge = config.DefaultWarmSpareAge
	}
	if o.Spares <= 0 {
		o.Spares = config.DefaultWarmSpares
	}
	if o.MaxSessions <= 0 {
		o.MaxSessions = config.DefaultWarmMaxSessions
	}
	return o
}

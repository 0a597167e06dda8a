// Package acp is the warm backend: a pool of long-lived `gemini --acp`
// processes, spoken to in the Agent Client Protocol, that answer in
// milliseconds instead of paying a Node start-up per turn. The turns no
// warm process can serve go to the fallback backend it is given (the
// one-shot one, which the server builds). What it shares with the one-shot
// backend of the CLI (its command line, environment and errors) is in
// package geminicli.
package acp

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
)

// Options is the warm backend's configuration, all of it given
// explicitly by the server: the pool's, the CLI's (the same as the
// one-shot backend's: how to find it, what to pass it, the limits of a
// turn), and the backend that serves the turns no warm process can (the
// one-shot one).
type Options struct {
	Warm WarmOptions
	CLI  geminicli.Options
	// Fallback serves the turns a warm process cannot: "latest" and
	// indexes, sessions no process holds, a full pool. It must not limit
	// concurrency itself: the turn already holds its slot.
	Fallback backend.Backend
}

// Backend is the warm backend: a pool of long-lived `gemini --acp`
// processes, and the fallback for what they cannot serve.
type Backend struct {
	warm     WarmOptions
	timeout  time.Duration // per turn; 0 means none
	fallback backend.Backend
	resolver *geminicli.Resolver
	pool     *pool
}

// New returns the warm backend.
func New(opts Options, log *slog.Logger) *Backend {
	o := opts.CLI.WithDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Backend{warm: opts.Warm, timeout: o.Timeout, fallback: opts.Fallback, resolver: geminicli.NewResolver(o.Gemini), pool: newPool(poolConfig{
		warm: opts.Warm,
		launch: &launcher{env: o.Env, operatorArgs: o.OperatorArgs(), allow: o.ApprovalMode == "yolo",
			maxOutput: o.MaxOutputBytes, log: log},
		defaultModel: o.DefaultModel,
		killGrace:    o.KillGrace,
		errs:         errorMap{timeout: o.Timeout, maxOutput: o.MaxOutputBytes},
		log:          log,
		clock:        systemClock{},
	})}
}

// Name is the backend's name as --backend spells it.
func (b *Backend) Name() string { return string(config.BackendWarm) }

// Family is the Gemini CLI's, whose session files it shares with the
// one-shot backend.
func (b *Backend) Family() config.Family { return config.FamilyCLI }

// Prepare starts, in the background, a process for chats without a system
// prompt and its spare session in dir, unless one runs already or the pool
// is full: a client that has just connected finds its first chat ready.
// It returns at once.
func (b *Backend) Prepare(dir string) { b.prepare(dir) }

// prepare is Prepare, returning a channel closed once its work is done.
func (b *Backend) prepare(dir string) <-chan struct{} {
	cmd, err := b.resolver.Command()
	if b.warm.NotOnConnect || err != nil { // an error: the first call reports it
		done := make(chan struct{})
		close(done)
		return done
	}
	return b.pool.prepare(cmd, dir)
}

// Close stops the warm processes and waits for them.
func (b *Backend) Close() { b.pool.close() }

// Run serves t warm where it can, and through the fallback otherwise.
func (b *Backend) Run(ctx context.Context, t backend.Turn) (*backend.Answer, error) {
	if err := t.Refuse(b.Name()); err != nil {
		return nil, err
	}
	cmd, err := b.resolver.Command()
	if err != nil {
		return nil, err
	}
	wctx := ctx
	if b.timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, b.timeout)
		defer cancel()
	}
	a, err := b.pool.run(wctx, cmd, t)
	if !errors.Is(err, errNotWarm) {
		if a != nil {
			a.NotApplied = geminicli.NotApplied(t)
		}
		return a, err
	}
	a, err = b.fallback.Run(ctx, t)
	if err == nil {
		// The turn went to disk without the warm process that may hold the
		// session: that process must never serve it again.
		b.pool.release(a.SessionID)
	}
	return a, err
}

// stderrKeep is how much of a warm process's stderr is kept, to explain
// its end.
const stderrKeep = 64 << 10

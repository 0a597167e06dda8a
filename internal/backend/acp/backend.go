// Package acp is the warm backend: a pool of long-lived `gemini --acp`
// processes, spoken to in the Agent Client Protocol, that answer in
// milliseconds instead of paying a Node start-up per turn. The turns no
// warm process can serve go to the fallback backend it is given (the
// one-shot one, package cli).
package acp

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/cli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
)

// Options is the warm backend's configuration, all of it given
// explicitly by the server: how to find the CLI, what to pass it, the
// limits of a turn, and the backend that serves the turns no warm process
// can (the one-shot one).
type Options struct {
	Warm WarmOptions
	// Command finds the CLI; the one-shot backend's Command, so that both
	// start the same executable.
	Command        func() (cli.Command, error)
	Env            []string // added to the server's environment, as for one-shot calls
	OperatorArgs   []string // the operator's CLI flags (cli.Options.OperatorArgs)
	DefaultModel   string
	ApprovalMode   string
	MaxOutputBytes int           // one answer's cap; 0 means config.DefaultMaxOutputBytes
	Timeout        time.Duration // per turn; 0 means none
	KillGrace      time.Duration // from session/cancel to kill; 0 means backend.DefaultKillGrace
	// Fallback serves the turns a warm process cannot: "latest" and
	// indexes, sessions no process holds, a full pool. It must not limit
	// concurrency itself: the turn already holds its slot.
	Fallback backend.Backend
}

// Backend is the warm backend: a pool of long-lived `gemini --acp`
// processes, and the fallback for what they cannot serve.
type Backend struct {
	opts Options
	pool *pool
}

// New returns the warm backend.
func New(opts Options, log *slog.Logger) *Backend {
	if opts.KillGrace <= 0 {
		opts.KillGrace = backend.DefaultKillGrace
	}
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = config.DefaultMaxOutputBytes
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Backend{opts: opts, pool: newPool(poolConfig{
		warm: opts.Warm,
		launch: &launcher{env: opts.Env, operatorArgs: opts.OperatorArgs, allow: opts.ApprovalMode == "yolo",
			maxOutput: opts.MaxOutputBytes, log: log},
		defaultModel: opts.DefaultModel,
		killGrace:    opts.KillGrace,
		errs:         errorMap{timeout: opts.Timeout, maxOutput: opts.MaxOutputBytes},
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
	cmd, err := b.opts.Command()
	if b.opts.Warm.NotOnConnect || err != nil { // an error: the first call reports it
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
	cmd, err := b.opts.Command()
	if err != nil {
		return nil, err
	}
	wctx := ctx
	if b.opts.Timeout > 0 {
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(ctx, b.opts.Timeout)
		defer cancel()
	}
	a, err := b.pool.run(wctx, cmd, t)
	if !errors.Is(err, errNotWarm) {
		if a != nil {
			a.NotApplied = cli.NotApplied(t)
		}
		return a, err
	}
	a, err = b.opts.Fallback.Run(ctx, t)
	if err == nil {
		// The turn went to disk without the warm process that may hold the
		// session: that process must never serve it again.
		b.pool.release(a.SessionID)
	}
	return a, err
}

// ConfigFor is the configuration of a warm backend that runs the CLI as o
// configures it, with the same limits, and falls back to oneShot (a
// cli.Runner built with o). It is the one place that derives the one from
// the other.
func ConfigFor(o cli.Options, w WarmOptions, oneShot *cli.Runner) Options {
	return Options{
		Warm:           w,
		Command:        oneShot.Command,
		Env:            o.Env,
		OperatorArgs:   o.OperatorArgs(),
		DefaultModel:   o.DefaultModel,
		ApprovalMode:   o.ApprovalMode,
		MaxOutputBytes: o.MaxOutputBytes,
		Timeout:        o.Timeout,
		KillGrace:      o.KillGrace,
		Fallback:       oneShot,
	}
}

// stderrKeep is how much of a warm process's stderr is kept, to explain
// its end.
const stderrKeep = 64 << 10

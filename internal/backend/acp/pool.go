package acp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/metrics"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// This file places calls on processes: which process serves a call, and
// when one starts. A process's life (idle stop, recycling, close) is in
// lifecycle.go, its spare sessions in spare.go, how it starts in
// launch.go, the mapping of its errors in errors.go.

// pool owns the warm processes and knows which process holds which
// session. A session lives in the process that created it: no other
// process, and no one-shot run, may touch it while that process holds it,
// since both would append to one session file and neither would see the
// other's turns. A session leaves its process (is released) when the
// process goes (recycled, crashed) or when a one-shot run has to serve it
// (a different system prompt, "latest", an index); it is never routed to
// that process again, and continues through one-shot resume (`-r`), its
// history being on disk.
type pool struct {
	opts         WarmOptions
	defaultModel string        // a turn's model when it names none
	killGrace    time.Duration // from session/cancel to kill
	errs         errorMap
	log          *slog.Logger
	// clock is the pool's time (see clock).
	clock clock

	mu       sync.Mutex
	procs    []*acpProc
	starting map[string]*startWait // system prompt key → a start in progress
	owner    map[string]*acpProc   // session id → the process holding it
	closed   bool
	// noStartUntil pauses starting processes after a failed start (a CLI
	// without --acp, a broken install): calls run one-shot meanwhile
	// instead of each paying for a failed start.
	noStartUntil time.Time

	// startProc starts a process (launcher.start, its idle time stamped on
	// clock; a test wraps it).
	startProc func(ctx context.Context, cmd geminicli.Command, key, systemPrompt string) (*acpProc, error)
	// bg is the background work (spares being made or discarded,
	// replacements starting), which close waits for; bgCtx ends with close.
	bg sync.WaitGroup
	// fills are the spares being made. close waits for them before it
	// stops the processes: a session/new cut short would leave a session
	// file that no one knows the id of.
	fills sync.WaitGroup
	// topMu makes topUp's choice and start of a spare one at a time.
	topMu    sync.Mutex
	bgCtx    context.Context
	bgCancel context.CancelFunc
}

// poolConfig is what a pool is made of: the warm options, how a process
// starts, what a turn needs, and the clock.
type poolConfig struct {
	warm         WarmOptions
	launch       *launcher
	defaultModel string
	killGrace    time.Duration
	errs         errorMap
	log          *slog.Logger
	clock        clock
}

// startRetry is how long the pool waits after a failed start.
const startRetry = time.Minute

type startWait struct {
	done chan struct{}
}

func newPool(c poolConfig) *pool {
	ctx, cancel := context.WithCancel(context.Background())
	pl := &pool{opts: c.warm.withDefaults(), defaultModel: c.defaultModel, killGrace: c.killGrace, errs: c.errs, log: c.log, clock: c.clock,
		starting: map[string]*startWait{}, owner: map[string]*acpProc{}, bgCtx: ctx, bgCancel: cancel}
	pl.startProc = func(ctx context.Context, cmd geminicli.Command, key, systemPrompt string) (*acpProc, error) {
		p, err := c.launch.start(ctx, cmd, key, systemPrompt)
		if ctx.Err() == nil || p != nil {
			metrics.WarmStart(err)
		}
		if p != nil {
			// Idle from its start, on the pool's clock; not yet shared.
			p.lastUsed = pl.clock.Now()
		}
		return p, err
	}
	metrics.WarmPool(pl.counts)
	return pl
}

// counts counts, for the metrics, the processes alive and their spare
// sessions ready.
func (pl *pool) counts() (procs, spares int) {
	pl.mu.Lock()
	live := make([]*acpProc, 0, len(pl.procs))
	for _, p := range pl.procs {
		if p.alive() {
			live = append(live, p)
		}
	}
	pl.mu.Unlock()
	for _, p := range live {
		p.mu.Lock()
		for _, s := range p.spares {
			select {
			case <-s.ready:
				if s.err == nil {
					spares++
				}
			default:
			}
		}
		p.mu.Unlock()
	}
	return len(live), spares
}

// background runs f as background work of the pool, unless the pool is
// closed; close waits for it.
func (pl *pool) background(f func()) bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.closed {
		return false
	}
	pl.bg.Add(1)
	go func() {
		defer pl.bg.Done()
		f()
	}()
	return true
}

func systemKey(systemPrompt string) string {
	if systemPrompt == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(systemPrompt))
	return hex.EncodeToString(sum[:])
}

// errNotWarm says a call cannot run warm and takes the one-shot path.
var errNotWarm = errors.New("not served warm")

// run serves c warm if it can. It returns errNotWarm when the call must
// take the one-shot path; any other error is the call's result.
func (pl *pool) run(ctx context.Context, cmd geminicli.Command, c backend.Turn) (*backend.Answer, error) {
	key := systemKey(c.SystemPrompt)
	var p *acpProc
	var id string
	switch {
	case c.Session == "":
		var err error
		if p, err = pl.process(ctx, cmd, key, c.SystemPrompt, c.Dir); err != nil {
			return nil, pl.errs.of(err)
		}
		if p == nil {
			return nil, errNotWarm
		}
		// Once the call ends the process may be idle: the time to make
		// the next chat's spare session.
		defer pl.topUp(key, c.Dir)
		defer pl.leave(p)
		if id, err = pl.session(ctx, p, c.Dir); err != nil {
			return nil, pl.errs.of(err)
		}
		// Another process, idle, can make one meanwhile.
		pl.topUp(key, c.Dir)
		pl.mu.Lock()
		pl.owner[id] = p
		pl.mu.Unlock()
	case session.IsUUID(c.Session):
		id = strings.ToLower(c.Session)
		pl.mu.Lock()
		p = pl.owner[id]
		usable := p != nil && p.key == key && p.use()
		pl.mu.Unlock()
		if !usable {
			pl.release(id)
			return nil, errNotWarm
		}
		defer pl.leave(p)
	default:
		return nil, errNotWarm // "latest" and indexes mean what the CLI says
	}
	model := c.Model
	if model == "" {
		model = pl.defaultModel
	}
	if err := p.agent.setModel(ctx, id, model); err != nil {
		return nil, pl.errs.of(err)
	}
	text, usage, stop, err := p.agent.prompt(ctx, id, c.Prompt, c.Observer, pl.killGrace)
	// The check runs while this call still holds p, so that a recycle
	// starts draining before the hold ends and no new call slips in.
	pl.afterPrompt(p)
	if err != nil {
		return nil, pl.errs.of(err)
	}
	ans := &backend.Answer{SessionID: id, Text: text, Usage: usage, Via: "warm"}
	if err := stopped(ans, stop); err != nil {
		return nil, err.SetRan(warmStderr)
	}
	if strings.TrimSpace(text) == "" {
		if stop == "max_tokens" {
			return nil, (&backend.Error{Kind: backend.KindInput, Reason: "the conversation would overflow the model's " +
				"context window (stopReason max_tokens); start a new session, summarising this one"}).SetRan(warmStderr)
		}
		return nil, geminicli.EmptyError().SetRan(warmStderr)
	}
	return ans, nil
}

// process returns a live process started with key, reserved for the call
// (the caller must call done), starting one when the pool has room (or can
// make room by retiring an idle process started with another system
// prompt). A new chat in dir ("" for none) goes to the process whose spare
// for dir is ready (see rank); when none is, and the pool has room,
// another process starts in the background for the chats that follow. It
// returns nil when no process can serve now.
func (pl *pool) process(ctx context.Context, cmd geminicli.Command, key, systemPrompt, dir string) (*acpProc, error) {
	started := false // a process started for this call: no other is needed yet
	for {
		pl.mu.Lock()
		if pl.closed {
			pl.mu.Unlock()
			return nil, nil
		}
		var best *acpProc
		var bestRank procRank
		live := 0
		for _, p := range pl.procs {
			if !p.alive() {
				continue
			}
			live++
			if p.key != key {
				continue
			}
			if r, ok := pl.rank(p, dir); ok && (best == nil || r.better(bestRank)) {
				best, bestRank = p, r
			}
		}
		if best != nil {
			ok := best.use()
			// Busy (making a spare or serving a call) with none ready: new
			// chats come faster than it makes spares.
			grow := dir != "" && !started && bestRank.ready == 0 && (bestRank.making || bestRank.load > 0) &&
				pl.opts.SpareAge >= 0 && pl.starting[key] == nil &&
				live+len(pl.starting) < pl.opts.Processes && !pl.clock.Now().Before(pl.noStartUntil)
			pl.mu.Unlock()
			if !ok {
				continue // it began draining meanwhile: choose again
			}
			if grow {
				pl.grow(cmd, key, systemPrompt, dir)
			}
			return best, nil
		}
		if w := pl.starting[key]; w != nil {
			pl.mu.Unlock()
			select {
			case <-w.done:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if pl.clock.Now().Before(pl.noStartUntil) {
			pl.mu.Unlock()
			return nil, nil
		}
		if live+len(pl.starting) >= pl.opts.Processes {
			victim := pl.idleOtherKey(key)
			// A process can end at any moment (its end is not under pl.mu):
			// one counted above may be gone now, making room.
			gone := pl.liveCount() < live
			pl.mu.Unlock()
			switch {
			case gone:
				continue
			case victim == nil:
				return nil, nil // full: this call goes one-shot
			}
			if pl.retire(victim) {
				metrics.WarmRecycle("room")
			}
			// Wait for it to end rather than spin; it is idle, so that
			// takes at most the kill grace.
			select {
			case <-victim.exited():
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			continue
		}
		w := &startWait{done: make(chan struct{})}
		pl.starting[key] = w
		pl.mu.Unlock()

		p, err := pl.startProc(ctx, cmd, key, systemPrompt)
		pl.mu.Lock()
		delete(pl.starting, key)
		if p != nil && pl.closed {
			// Closed during the start: close did not see p.
			pl.mu.Unlock()
			close(w.done)
			p.kill()
			return nil, nil
		}
		if p != nil {
			pl.procs = append(pl.procs, p)
			pl.watchProc(p)
		} else if ctx.Err() == nil {
			pl.noStartUntil = pl.clock.Now().Add(startRetry)
			pl.log.Warn("the warm backend could not start gemini --acp; calls run one-shot for a while", "retryIn", startRetry, "err", err)
		}
		pl.mu.Unlock()
		close(w.done)
		if p == nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, nil
		}
		started = true
	}
}

// prepare gets the pool ready for a new chat without a system prompt in
// dir, in the background: it starts a process for such chats unless one
// runs or is starting, or the pool is full, and makes its spare session in
// dir. A client that has just connected finds its first chat served in
// milliseconds instead of waiting for the CLI's start (about 2 s). The
// spare is renewed on expiry until the process's idle stop gives the
// memory back (--warm-idle-timeout).
// The channel it returns is closed once that is done (the spare being
// made), or found not to be needed.
func (pl *pool) prepare(cmd geminicli.Command, dir string) <-chan struct{} {
	done := make(chan struct{})
	if !pl.background(func() {
		defer close(done)
		pl.mu.Lock()
		var have *acpProc
		for _, p := range pl.procs {
			if p.alive() && p.key == "" && !p.isDraining() {
				have = p
				break
			}
		}
		busy := pl.starting[""] != nil || pl.liveCount()+len(pl.starting) >= pl.opts.Processes ||
			pl.clock.Now().Before(pl.noStartUntil)
		pl.mu.Unlock()
		if have != nil {
			pl.refill(have, dir, true)
			return
		}
		if busy {
			return
		}
		p, err := pl.process(pl.bgCtx, cmd, "", "", "")
		if p == nil {
			if err != nil && pl.bgCtx.Err() == nil {
				pl.log.Debug("could not prepare a warm process", "err", err)
			}
			return
		}
		pl.log.Info("a warm gemini process is ready for the first chat", "pid", p.pid(), "dir", dir)
		pl.leave(p)
		pl.refill(p, dir, true)
	}) {
		close(done)
	}
	return done
}

// liveCount counts the processes still running; pl.mu must be held.
func (pl *pool) liveCount() int {
	n := 0
	for _, p := range pl.procs {
		if p.alive() {
			n++
		}
	}
	return n
}

// idleOtherKey finds a process started with another system prompt and
// running nothing; pl.mu must be held.
func (pl *pool) idleOtherKey(key string) *acpProc {
	for _, p := range pl.procs {
		if p.alive() && p.key != key && p.load() == 0 {
			return p
		}
	}
	return nil
}

// release takes session id away from the process holding it, for good.
func (pl *pool) release(id string) {
	pl.mu.Lock()
	delete(pl.owner, strings.ToLower(id))
	pl.mu.Unlock()
}

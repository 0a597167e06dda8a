package acp

import (
	"sync"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/metrics"
)

// A process's life in the pool: watched until it ends, stopped when idle,
// recycled past its limits (drained, or replaced first), stopped by close.

// watchProc adds p's watch to the pool's background work, so that close
// waits for it (it removes the files of p's spares); pl.mu must be held,
// and the pool not closed.
func (pl *pool) watchProc(p *acpProc) {
	pl.bg.Add(1)
	go func() {
		defer pl.bg.Done()
		pl.watch(p)
	}()
}

// watch removes a process from the pool when it exits, releasing its
// sessions to one-shot resume.
func (pl *pool) watch(p *acpProc) {
	tick, stopTick := pl.clock.NewTicker(min(pl.opts.IdleTimeout/4, time.Minute))
	defer stopTick()
	// Spares are checked four times per SpareAge: one lives at most 1.25
	// SpareAge (and is never used past SpareAge).
	spareTick, stopSpareTick := pl.clock.NewTicker(max(pl.opts.SpareAge/4, time.Second))
	defer stopSpareTick()
	for waiting := true; waiting; {
		select {
		case <-p.exited():
			waiting = false
		case <-spareTick:
			pl.expireSpares(p)
		case <-tick:
			if p.idleFor(pl.clock.Now()) >= pl.opts.IdleTimeout && !p.isDraining() {
				pl.log.Info("stopping an idle warm gemini process", "pid", p.pid(), "idle", pl.opts.IdleTimeout)
				if pl.retire(p) {
					metrics.WarmRecycle("idle")
				}
			}
		}
	}
	pl.mu.Lock()
	for i, q := range pl.procs {
		if q == p {
			pl.procs = append(pl.procs[:i:i], pl.procs[i+1:]...)
			break
		}
	}
	for id, q := range pl.owner {
		if q == p {
			delete(pl.owner, id)
		}
	}
	pl.mu.Unlock()
	pl.dropSpares(p)
	if !p.isDraining() {
		metrics.WarmRecycle("exited")
		pl.log.Warn("a warm gemini process exited; its sessions continue through one-shot resume", "pid", p.pid(), "err", p.agent.conn.err())
	}
}

// afterPrompt recycles a process that has served enough prompts or grown
// too big: it takes no new work, and ends once its calls in flight end. It
// runs while the call still holds p.
func (pl *pool) afterPrompt(p *acpProc) {
	p.mu.Lock()
	if p.draining {
		p.mu.Unlock()
		return // already on its way out, and logged as such
	}
	prompts, sessions := p.agent.counts()
	if prompts >= pl.opts.MaxPrompts {
		// Deciding and draining under one lock: no call can take p between
		// the two, so p serves at most the calls holding it now.
		p.draining = true
		held := p.inflight
		p.mu.Unlock()
		metrics.WarmRecycle("prompts")
		pl.log.Info("recycling a warm gemini process after its prompt limit", "pid", p.pid(), "prompts", prompts, "limit", pl.opts.MaxPrompts, "callsHolding", held)
		return // this call holds p: its done stops p if it is the last
	}
	p.mu.Unlock()
	if sessions >= pl.opts.MaxSessions {
		// Each new session costs more in a process that holds many (the
		// CLI rebuilds every live session's prompt): a fresh process takes
		// over, started before this one stops taking calls.
		if pl.replace(p, "after its session limit", "sessions", sessions, "limit", pl.opts.MaxSessions) {
			metrics.WarmRecycle("sessions")
		}
		return
	}
	// Memory grows slowly; reading /proc every 16 prompts is enough.
	if prompts%16 != 1 {
		return
	}
	if rss := p.rss(); rss > pl.opts.MaxRSS && pl.retire(p) {
		metrics.WarmRecycle("memory")
		pl.log.Info("recycling a warm gemini process past its memory limit", "pid", p.pid(), "rssMB", rss>>20, "limitMB", pl.opts.MaxRSS>>20)
	}
}

// replace starts a process to take p's place and retires p once it is
// ready, so that no call waits for a start: meanwhile p serves on (but
// makes no more spares). If the start fails, p is retired all the same,
// and calls start a process on demand or run one-shot as usual. why and
// args say why, in the log. It reports whether this call began p's
// replacement.
func (pl *pool) replace(p *acpProc, why string, args ...any) bool {
	p.mu.Lock()
	if p.draining || p.replacing {
		p.mu.Unlock()
		return false
	}
	p.replacing = true
	p.mu.Unlock()
	pl.log.Info("recycling a warm gemini process "+why, append([]any{"pid", p.pid()}, args...)...)
	started := pl.background(func() {
		q, err := pl.startProc(pl.bgCtx, p.cmdline, p.key, p.system)
		pl.mu.Lock()
		closed := pl.closed
		if q != nil && !closed {
			pl.procs = append(pl.procs, q)
			pl.watchProc(q)
		}
		pl.mu.Unlock()
		switch {
		case q != nil && closed:
			q.kill()
		case q != nil:
			pl.log.Info("a warm gemini process replaced another", "pid", q.pid(), "replaced", p.pid())
		case !closed:
			pl.log.Warn("could not start a warm gemini process to replace another; retiring it all the same", "pid", p.pid(), "err", err)
		}
		pl.retire(p)
	})
	if !started {
		pl.retire(p)
	}
	return true
}

// retire drains p: no new work (use refuses it); it is stopped when the
// last call holding it ends (see done). It reports whether this call
// retired p, false when p was already draining.
func (pl *pool) retire(p *acpProc) bool {
	p.mu.Lock()
	if p.draining {
		p.mu.Unlock()
		return false // already on its way out
	}
	p.draining = true
	idle := p.inflight == 0
	p.mu.Unlock()
	if idle {
		go p.kill()
	}
	return true
}

// leave ends a call's hold on p (see acpProc.done), at the pool's time.
func (pl *pool) leave(p *acpProc) { p.done(pl.clock.Now()) }

// close stops every process and waits for them.
func (pl *pool) close() {
	pl.mu.Lock()
	pl.closed = true
	procs := append([]*acpProc(nil), pl.procs...)
	pl.mu.Unlock()
	pl.bgCancel()
	pl.fills.Wait()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.mu.Lock()
			p.draining = true
			p.mu.Unlock()
			p.kill()
		}()
	}
	wg.Wait()
	// Spares being made fail once their process is gone; replacements
	// starting see bgCtx end.
	pl.bg.Wait()
}

// idleFor is how long p has run no prompt, at now.
func (p *acpProc) idleFor(now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inflight > 0 {
		return 0
	}
	return now.Sub(p.lastUsed)
}

func (p *acpProc) isDraining() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.draining
}

func (p *acpProc) load() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.inflight
}

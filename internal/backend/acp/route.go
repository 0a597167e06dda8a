package acp

import (
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
)

// Where a new chat goes when the pool runs several processes for its
// system prompt, and when another one starts: a chat goes where a spare
// session is ready, so that its answer waits for no session/new (see
// spare.go for how spares are made).

// procRank is how well a process suits a new chat in a folder.
type procRank struct {
	ready  int  // its spares ready for the folder
	making bool // it is making a spare (session/new runs first)
	load   int  // calls holding it
}

// better reports whether a process ranked r serves a new chat sooner than
// one ranked o: one with a spare ready and not making one (it answers at
// once), then one with a spare ready, then one making none (it can make
// the chat's session at once, beside another process making a spare), then
// the least loaded, then the one with more spares ready.
func (r procRank) better(o procRank) bool {
	rs, os := r.score(), o.score()
	switch {
	case rs != os:
		return rs < os
	case r.load != o.load:
		return r.load < o.load
	default:
		return r.ready > o.ready
	}
}

func (r procRank) score() int {
	switch {
	case r.ready > 0 && !r.making:
		return 0
	case r.ready > 0:
		return 1
	case !r.making:
		return 2
	default:
		return 3
	}
}

// rank ranks p for a new chat in dir, reporting false when p takes no new
// work; pl.mu must be held.
func (pl *pool) rank(p *acpProc, dir string) (procRank, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.draining {
		return procRank{}, false
	}
	var r procRank
	if dir != "" {
		r.ready, r.making = p.spareState(dir)
	}
	r.load = p.inflight
	return r, true
}

// grow starts another process for chats with system prompt key in the
// background, and its spares for dir once it is up: new chats come faster
// than the processes running make spares. --warm-idle-timeout stops it
// once they stop coming.
func (pl *pool) grow(cmd geminicli.Command, key, systemPrompt, dir string) {
	pl.mu.Lock()
	if pl.closed || pl.starting[key] != nil {
		pl.mu.Unlock()
		return
	}
	w := &startWait{done: make(chan struct{})}
	pl.starting[key] = w
	pl.bg.Add(1)
	pl.mu.Unlock()
	go func() {
		defer pl.bg.Done()
		p, err := pl.startProc(pl.bgCtx, cmd, key, systemPrompt)
		pl.mu.Lock()
		delete(pl.starting, key)
		closed := pl.closed
		if p != nil && !closed {
			pl.procs = append(pl.procs, p)
			pl.watchProc(p)
		}
		if p == nil && pl.bgCtx.Err() == nil {
			pl.noStartUntil = pl.clock.Now().Add(startRetry)
		}
		pl.mu.Unlock()
		close(w.done)
		switch {
		case p != nil && closed:
			p.kill()
		case p != nil:
			pl.log.Info("another warm gemini process started: new chats come faster than spare sessions are made", "pid", p.pid(), "dir", dir)
			pl.topUp(key, dir)
		case pl.bgCtx.Err() == nil:
			pl.log.Warn("could not start another warm gemini process", "err", err)
		}
	}()
}

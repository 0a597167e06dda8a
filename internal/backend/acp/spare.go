package acp

import (
	"context"
	"errors"
	"strconv"
	"time"
)

// spare is a session created ahead of time in one process and cwd, so that
// a new chat skips session/new, by far the largest part of a warm chat's
// time. Its context is frozen at creation (the CLI writes the date and the
// folder listing into the session at session/new), so it is used only
// within SpareAge, and its file is removed when it is discarded unused.
type spare struct {
	dir   string
	calls int // the process's calls when it was asked for
	// kept: made for a client that connected and has not chatted yet
	// (see pool.prepare), so it is renewed when it expires even though no
	// call came, until the process's idle stop.
	kept  bool
	ready chan struct{} // closed once session/new has answered
	// Set before ready is closed.
	id   string
	made time.Time
	err  error
	// file is the session's file in the CLI's store when it had one once
	// made: the start-up of any other gemini run with the same home (a
	// one-shot call, a replacement process, the user's own CLI) deletes
	// the files of sessions that hold no turn, and a session whose file is
	// gone would be written without its header, which resume needs.
	file string
}

// slotKey names spare slot i of dir in acpProc.spares (slot 0 is dir
// itself): a process keeps up to WarmOptions.Spares spares per folder.
func slotKey(dir string, i int) string {
	if i == 0 {
		return dir
	}
	return dir + "\x00" + strconv.Itoa(i)
}

// spareState is what p holds for dir: its spares ready (made without
// error), and whether one is being made (for any folder: session/new runs
// one at a time in a process); p.mu must be held.
func (p *acpProc) spareState(dir string) (ready int, making bool) {
	for _, s := range p.spares {
		select {
		case <-s.ready:
			if s.err == nil && s.dir == dir {
				ready++
			}
		default:
			making = true
		}
	}
	return ready, making
}

// takeSpare removes one of p's spares for dir and returns it: the oldest
// ready (the younger ones keep longer), else one being made; nil when p
// has none.
func (p *acpProc) takeSpare(dir string, slots int) *spare {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ready, pending *spare
	readyKey, pendingKey := "", ""
	for i := range slots {
		key := slotKey(dir, i)
		s := p.spares[key]
		if s == nil {
			continue
		}
		select {
		case <-s.ready:
			if ready == nil || s.made.Before(ready.made) {
				ready, readyKey = s, key
			}
		default:
			if pending == nil {
				pending, pendingKey = s, key
			}
		}
	}
	switch {
	case ready != nil:
		delete(p.spares, readyKey)
		return ready
	case pending != nil:
		delete(p.spares, pendingKey)
	}
	return pending
}

// session returns a new session in dir for a call holding p: one of the
// process's spares for dir young enough (waiting for one being made,
// which is never slower than asking for another: session/new runs one at
// a time), else a new one.
func (pl *pool) session(ctx context.Context, p *acpProc, dir string) (string, error) {
	for {
		s := p.takeSpare(dir, pl.opts.Spares)
		if s == nil {
			break
		}
		select {
		case <-s.ready:
			if s.err == nil {
				age := pl.clock.Now().Sub(s.made)
				switch {
				case age >= pl.opts.SpareAge:
					pl.discard(p, s)
				case s.file != "" && !fileExists(s.file):
					pl.log.Debug("a spare session's file was removed (by another gemini run's start-up clean-up); making a new session", "pid", p.pid(), "session", s.id)
				default:
					pl.log.Debug("a new chat uses a spare session", "pid", p.pid(), "session", s.id, "age", age)
					return s.id, nil
				}
			}
		case <-ctx.Done():
			// The spare is still being made; it is discarded once made.
			pl.background(func() {
				<-s.ready
				if s.err == nil {
					pl.discard(p, s)
				}
			})
			return "", ctx.Err()
		}
	}
	return p.agent.newSession(ctx, dir, false)
}

// refill makes a spare session for dir in p, if p is idle (so that making
// it competes with no call), makes none already, has fewer than
// WarmOptions.Spares for dir, and is not on its way out. It returns the
// spare being made, or nil. kept marks a spare renewed on expiry while no
// call comes (see spare.kept).
func (pl *pool) refill(p *acpProc, dir string, kept bool) *spare {
	if pl.opts.SpareAge < 0 {
		return nil
	}
	_, sessions := p.agent.counts()
	p.mu.Lock()
	ok := p.inflight == 0 && !p.draining && !p.replacing && p.alive() && sessions < pl.opts.MaxSessions
	key := ""
	if ok {
		_, making := p.spareState(dir)
		ok = false
		for i := range pl.opts.Spares {
			if k := slotKey(dir, i); p.spares[k] == nil {
				key, ok = k, !making
				break
			}
		}
	}
	var s *spare
	if ok {
		s = &spare{dir: dir, calls: p.calls, kept: kept, ready: make(chan struct{})}
		p.spares[key] = s
	}
	p.mu.Unlock()
	if !ok {
		return nil
	}
	pl.mu.Lock()
	started := !pl.closed
	if started {
		pl.fills.Add(1)
	}
	pl.mu.Unlock()
	if started {
		go pl.fill(p, key, s)
	}
	if !started {
		s.err = errors.New("the pool is closed")
		close(s.ready)
		p.mu.Lock()
		if p.spares[key] == s {
			delete(p.spares, key)
		}
		p.mu.Unlock()
	}
	return s
}

// topUp makes the next spare for new chats in dir with system prompt key:
// in the idle process of key that holds the fewest ready for dir (the one
// that answered less recently on a tie), and only while no process of key
// is making one. One spare at a time across the pool, so that a process
// making none stays free to answer the next chat at once (the CLI runs on
// one thread), and spares in two processes do not contend on the CLI's
// lock over its project registry. Each spare made asks for the next (see
// fill), until every idle process holds WarmOptions.Spares for dir.
func (pl *pool) topUp(key, dir string) {
	if pl.opts.SpareAge < 0 {
		return
	}
	pl.topMu.Lock()
	defer pl.topMu.Unlock()
	pl.mu.Lock()
	procs := make([]*acpProc, 0, len(pl.procs))
	for _, p := range pl.procs {
		if p.key == key && p.alive() {
			procs = append(procs, p)
		}
	}
	pl.mu.Unlock()
	var best *acpProc
	bestReady := 0
	var bestUsed time.Time
	for _, p := range procs {
		_, sessions := p.agent.counts()
		p.mu.Lock()
		ready, making := p.spareState(dir)
		idle := p.inflight == 0 && !p.draining && !p.replacing && sessions < pl.opts.MaxSessions
		used := p.lastUsed
		p.mu.Unlock()
		if making {
			return
		}
		if !idle || ready >= pl.opts.Spares {
			continue
		}
		if best == nil || ready < bestReady || ready == bestReady && used.Before(bestUsed) {
			best, bestReady, bestUsed = p, ready, used
		}
	}
	if best != nil {
		pl.refill(best, dir, false)
	}
}

// fill makes spare s in p's slot key, then asks for the next spare.
func (pl *pool) fill(p *acpProc, key string, s *spare) {
	defer pl.fills.Done()
	// Not cut short by close (see fills); the process's end ends it.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	made := pl.clock.Now()
	// newSession's try: when a call holds the session-creation lock, no
	// spare is made (that call's end asks again), so a spare never queues
	// before a call.
	id, err := p.agent.newSession(ctx, s.dir, true)
	s.id, s.made, s.err = id, made, err
	if err == nil {
		s.file = sessionFile(p.cliDir, id)
	}
	if err != nil {
		// Gone from the spares before anyone is told it failed, so that
		// whoever waits on ready never finds the failed spare still kept.
		p.mu.Lock()
		if p.spares[key] == s {
			delete(p.spares, key)
		}
		p.mu.Unlock()
		close(s.ready)
		if !errors.Is(err, errCreating) && p.alive() {
			pl.log.Debug("could not make a spare session", "pid", p.pid(), "err", err)
		}
		return
	}
	close(s.ready)
	// Logged once ready: whoever reads the line finds the spare ready.
	pl.log.Debug("made a spare session", "pid", p.pid(), "session", id, "elapsed", pl.clock.Now().Sub(made))
	// A spare kept for a client's first chat asks for no more.
	if !s.kept {
		pl.topUp(p.key, s.dir)
	}
}

// expireSpares discards p's spares older than SpareAge, and makes a new
// one for each dir p served a call in since (an idle process keeps no
// fresh spare for long: it makes at most one more), and for each kept one
// while p has served no call since it was made.
func (pl *pool) expireSpares(p *acpProc) {
	now := pl.clock.Now()
	var old []*spare
	p.mu.Lock()
	for key, s := range p.spares {
		select {
		case <-s.ready:
		default:
			continue
		}
		if s.err == nil && now.Sub(s.made) >= pl.opts.SpareAge {
			delete(p.spares, key)
			old = append(old, s)
		}
	}
	calls := p.calls
	p.mu.Unlock()
	for _, s := range old {
		pl.discard(p, s)
		switch {
		case calls > s.calls:
			pl.refill(p, s.dir, false)
		case s.kept:
			pl.refill(p, s.dir, true)
		}
	}
}

// discard forgets a spare session that no call used. The process keeps it
// in memory (the CLI frees no session); its file goes.
func (pl *pool) discard(p *acpProc, s *spare) {
	removed, err := removeSessionFile(p.cliDir, s.id)
	pl.log.Debug("discarded a spare session", "pid", p.pid(), "session", s.id, "fileRemoved", removed, "err", err)
}

// dropSpares discards every spare of p, which has ended.
func (pl *pool) dropSpares(p *acpProc) {
	p.mu.Lock()
	spares := p.spares
	p.spares = map[string]*spare{}
	p.mu.Unlock()
	for _, s := range spares {
		<-s.ready // a process that has ended answers nothing more
		if s.err == nil {
			pl.discard(p, s)
		}
	}
}

package acp

import (
	"context"
	"errors"
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

// session returns a new session in dir for a call holding p: the process's
// spare for dir if it has one young enough (waiting for it if it is being
// made, which is never slower than asking for another: session/new runs
// one at a time), else a new one.
func (pl *pool) session(ctx context.Context, p *acpProc, dir string) (string, error) {
	p.mu.Lock()
	s := p.spares[dir]
	delete(p.spares, dir)
	p.mu.Unlock()
	if s != nil {
		select {
		case <-s.ready:
			if s.err == nil {
				age := pl.clock.Now().Sub(s.made)
				switch {
				case age >= pl.opts.SpareAge:
					pl.discard(p, s)
				case s.file != "" && !fileExists(s.file):
					pl.log.Debug("a spare session's file was removed (by another gemini run's start-up clean-up); making a new session", "pid", p.cmd.Process.Pid, "session", s.id)
				default:
					pl.log.Debug("a new chat uses a spare session", "pid", p.cmd.Process.Pid, "session", s.id, "age", age)
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
	return p.newSession(ctx, dir, false)
}

// refill makes a spare session for dir in p, if p is idle (so that making
// it competes with no call), has none for dir, and is not on its way out.
// It returns the spare being made, or nil. kept marks a spare renewed on
// expiry while no call comes (see spare.kept).
func (pl *pool) refill(p *acpProc, dir string, kept bool) *spare {
	if pl.opts.SpareAge < 0 {
		return nil
	}
	p.mu.Lock()
	ok := p.inflight == 0 && !p.draining && !p.replacing && p.alive() && p.spares[dir] == nil && p.sessions < pl.opts.MaxSessions
	var s *spare
	if ok {
		s = &spare{dir: dir, calls: p.calls, kept: kept, ready: make(chan struct{})}
		p.spares[dir] = s
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
		go pl.fill(p, s)
	}
	if !started {
		s.err = errors.New("the pool is closed")
		close(s.ready)
		p.mu.Lock()
		if p.spares[dir] == s {
			delete(p.spares, dir)
		}
		p.mu.Unlock()
	}
	return s
}

// fill makes spare s in p.
func (pl *pool) fill(p *acpProc, s *spare) {
	defer pl.fills.Done()
	// Not cut short by close (see fills); the process's end ends it.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	made := pl.clock.Now()
	// newSession's try: when a call holds the session-creation lock, no
	// spare is made (that call's end asks again), so a spare never queues
	// before a call.
	id, err := p.newSession(ctx, s.dir, true)
	s.id, s.made, s.err = id, made, err
	if err == nil {
		s.file = sessionFile(p.cliDir, id)
	}
	close(s.ready)
	if err != nil {
		p.mu.Lock()
		if p.spares[s.dir] == s {
			delete(p.spares, s.dir)
		}
		p.mu.Unlock()
		if !errors.Is(err, errCreating) && p.alive() {
			pl.log.Debug("could not make a spare session", "pid", p.cmd.Process.Pid, "err", err)
		}
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
	for dir, s := range p.spares {
		select {
		case <-s.ready:
		default:
			continue
		}
		if s.err == nil && now.Sub(s.made) >= pl.opts.SpareAge {
			delete(p.spares, dir)
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
	pl.log.Debug("discarded a spare session", "pid", p.cmd.Process.Pid, "session", s.id, "fileRemoved", removed, "err", err)
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

package acp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/cli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/proc"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
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
}

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
	r    *Backend
	opts WarmOptions

	mu       sync.Mutex
	procs    []*acpProc
	starting map[string]*startWait // system prompt key → a start in progress
	owner    map[string]*acpProc   // session id → the process holding it
	closed   bool
	// noStartUntil pauses starting processes after a failed start (a CLI
	// without --acp, a broken install): calls run one-shot meanwhile
	// instead of each paying for a failed start.
	noStartUntil time.Time

	// now is the clock that ages spares, startProc starts a process
	// (start; a test wraps them).
	now       func() time.Time
	startProc func(ctx context.Context, cmd cli.Command, key, systemPrompt string) (*acpProc, error)
	// bg is the background work (spares being made or discarded,
	// replacements starting), which close waits for; bgCtx ends with close.
	bg sync.WaitGroup
	// fills are the spares being made. close waits for them before it
	// stops the processes: a session/new cut short would leave a session
	// file that no one knows the id of.
	fills    sync.WaitGroup
	bgCtx    context.Context
	bgCancel context.CancelFunc
}

// startRetry is how long the pool waits after a failed start.
const startRetry = time.Minute

type startWait struct {
	done chan struct{}
}

func newPool(r *Backend, o WarmOptions) *pool {
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
	if o.MaxSessions <= 0 {
		o.MaxSessions = config.DefaultWarmMaxSessions
	}
	ctx, cancel := context.WithCancel(context.Background())
	pl := &pool{r: r, opts: o, starting: map[string]*startWait{}, owner: map[string]*acpProc{},
		now: time.Now, bgCtx: ctx, bgCancel: cancel}
	pl.startProc = pl.start
	return pl
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
func (pl *pool) run(ctx context.Context, cmd cli.Command, c backend.Turn) (*backend.Answer, error) {
	key := systemKey(c.SystemPrompt)
	var p *acpProc
	var id string
	switch {
	case c.Session == "":
		var err error
		if p, err = pl.process(ctx, cmd, key, c.SystemPrompt); err != nil {
			return nil, pl.failure(nil, err, c)
		}
		if p == nil {
			return nil, errNotWarm
		}
		// Once the call ends the process may be idle: the time to make
		// the next chat's spare session.
		defer pl.refill(p, c.Dir)
		defer p.done()
		if id, err = pl.session(ctx, p, c.Dir); err != nil {
			return nil, pl.failure(p, err, c)
		}
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
		defer p.done()
	default:
		return nil, errNotWarm // "latest" and indexes mean what the CLI says
	}
	model := c.Model
	if model == "" {
		model = pl.r.opts.DefaultModel
	}
	if err := p.setModel(ctx, id, model); err != nil {
		return nil, pl.failure(p, err, c)
	}
	text, usage, err := p.prompt(ctx, id, c.Prompt, c.Observer, pl.r.opts.KillGrace)
	// The check runs while this call still holds p, so that a recycle
	// starts draining before the hold ends and no new call slips in.
	pl.afterPrompt(p)
	if err != nil {
		return nil, pl.failure(p, err, c)
	}
	if strings.TrimSpace(text) == "" {
		return nil, cli.EmptyError().SetRan(warmStderr)
	}
	return &backend.Answer{SessionID: id, Text: text, Usage: usage, Via: "warm"}, nil
}

// process returns a live process started with key, reserved for the call
// (the caller must call done), starting one when the pool has room (or can
// make room by retiring an idle process started with another system
// prompt). It returns nil when no process can serve now.
func (pl *pool) process(ctx context.Context, cmd cli.Command, key, systemPrompt string) (*acpProc, error) {
	for {
		pl.mu.Lock()
		if pl.closed {
			pl.mu.Unlock()
			return nil, nil
		}
		var best *acpProc
		live := 0
		for _, p := range pl.procs {
			if !p.alive() {
				continue
			}
			live++
			if p.key == key && !p.isDraining() && (best == nil || p.load() < best.load()) {
				best = p
			}
		}
		if best != nil {
			ok := best.use()
			pl.mu.Unlock()
			if ok {
				return best, nil
			}
			continue // it began draining meanwhile: choose again
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
		if time.Now().Before(pl.noStartUntil) {
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
			pl.retire(victim)
			// Wait for it to end rather than spin; it is idle, so that
			// takes at most the kill grace.
			select {
			case <-victim.dead:
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
			pl.noStartUntil = time.Now().Add(startRetry)
			pl.r.log.Warn("the warm backend could not start gemini --acp; calls run one-shot for a while", "retryIn", startRetry, "err", err)
		}
		pl.mu.Unlock()
		close(w.done)
		if p == nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, nil
		}
	}
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

func (pl *pool) start(ctx context.Context, cmd cli.Command, key, systemPrompt string) (*acpProc, error) {
	env := pl.r.childEnv()
	sysDir := ""
	if systemPrompt != "" {
		// The system prompt is per process: it lives as long as the process.
		dir, err := os.MkdirTemp("", "gemini-mcp-")
		if err != nil {
			return nil, cli.StartError("cannot create a temporary directory for the system prompt: "+err.Error(), err)
		}
		path := filepath.Join(dir, "SYSTEM.md")
		if err := os.WriteFile(path, []byte(systemPrompt), 0o600); err != nil {
			os.RemoveAll(dir)
			return nil, cli.StartError("cannot write the system prompt file: "+err.Error(), err)
		}
		env = proc.SetEnv(env, "GEMINI_SYSTEM_MD", path)
		sysDir = dir
	}
	args := append([]string{"--acp"}, pl.r.operatorArgs()...)
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	p, err := startACP(sctx, cmd, args, env, key, sysDir, pl.r.opts.ApprovalMode == "yolo", pl.r.opts.MaxOutputBytes, pl.r.log)
	if err != nil {
		if sysDir != "" {
			os.RemoveAll(sysDir)
		}
		return nil, cli.StartError("the warm gemini process could not start: "+err.Error(), err)
	}
	p.home = cliHome(env)
	p.cmdline, p.system = cmd, systemPrompt
	return p, nil
}

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
	tick := time.NewTicker(min(pl.opts.IdleTimeout/4, time.Minute))
	defer tick.Stop()
	// Spares are checked four times per SpareAge: one lives at most 1.25
	// SpareAge (and is never used past SpareAge).
	spareTick := time.NewTicker(max(pl.opts.SpareAge/4, time.Second))
	defer spareTick.Stop()
	for waiting := true; waiting; {
		select {
		case <-p.dead:
			waiting = false
		case <-spareTick.C:
			pl.expireSpares(p)
		case <-tick.C:
			if p.idleFor() >= pl.opts.IdleTimeout && !p.isDraining() {
				pl.r.log.Info("stopping an idle warm gemini process", "pid", p.cmd.Process.Pid, "idle", pl.opts.IdleTimeout)
				pl.retire(p)
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
		pl.r.log.Warn("a warm gemini process exited; its sessions continue through one-shot resume", "pid", p.cmd.Process.Pid, "err", p.deadErr)
	}
}

// cliHome is the directory the CLI run with env keeps its files under:
// GEMINI_CLI_HOME, else HOME.
func cliHome(env []string) string {
	// The last entry of a variable wins, as in os/exec.
	cliHome, home := "", ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GEMINI_CLI_HOME="); ok {
			cliHome = v
		}
		if v, ok := strings.CutPrefix(kv, "HOME="); ok {
			home = v
		}
	}
	switch {
	case cliHome != "":
		return cliHome
	case home != "":
		return home
	}
	home, _ = os.UserHomeDir()
	return home
}

// release takes session id away from the process holding it, for good.
func (pl *pool) release(id string) {
	pl.mu.Lock()
	delete(pl.owner, strings.ToLower(id))
	pl.mu.Unlock()
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
	prompts, sessions := p.prompts, p.sessions
	if prompts >= pl.opts.MaxPrompts {
		// Deciding and draining under one lock: no call can take p between
		// the two, so p serves at most the calls holding it now.
		p.draining = true
		held := p.inflight
		p.mu.Unlock()
		pl.r.log.Info("recycling a warm gemini process after its prompt limit", "pid", p.cmd.Process.Pid, "prompts", prompts, "limit", pl.opts.MaxPrompts, "callsHolding", held)
		return // this call holds p: its done stops p if it is the last
	}
	p.mu.Unlock()
	if sessions >= pl.opts.MaxSessions {
		// Each new session costs more in a process that holds many (the
		// CLI rebuilds every live session's prompt): a fresh process takes
		// over, started before this one stops taking calls.
		pl.replace(p, "after its session limit", "sessions", sessions, "limit", pl.opts.MaxSessions)
		return
	}
	// Memory grows slowly; reading /proc every 16 prompts is enough.
	if prompts%16 != 1 {
		return
	}
	if rss := p.rss(); rss > pl.opts.MaxRSS && pl.retire(p) {
		pl.r.log.Info("recycling a warm gemini process past its memory limit", "pid", p.cmd.Process.Pid, "rssMB", rss>>20, "limitMB", pl.opts.MaxRSS>>20)
	}
}

// replace starts a process to take p's place and retires p once it is
// ready, so that no call waits for a start: meanwhile p serves on (but
// makes no more spares). If the start fails, p is retired all the same,
// and calls start a process on demand or run one-shot as usual. why and
// args say why, in the log.
func (pl *pool) replace(p *acpProc, why string, args ...any) {
	p.mu.Lock()
	if p.draining || p.replacing {
		p.mu.Unlock()
		return
	}
	p.replacing = true
	p.mu.Unlock()
	pl.r.log.Info("recycling a warm gemini process "+why, append([]any{"pid", p.cmd.Process.Pid}, args...)...)
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
			pl.r.log.Info("a warm gemini process replaced another", "pid", q.cmd.Process.Pid, "replaced", p.cmd.Process.Pid)
		case !closed:
			pl.r.log.Warn("could not start a warm gemini process to replace another; retiring it all the same", "pid", p.cmd.Process.Pid, "err", err)
		}
		pl.retire(p)
	})
	if !started {
		pl.retire(p)
	}
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

// failure turns a warm error into the call's *backend.Error.
func (pl *pool) failure(p *acpProc, err error, c backend.Turn) error {
	var re *rpcError
	switch {
	case errors.As(err, &re):
		return classifyRPC(re)
	case errors.Is(err, context.DeadlineExceeded):
		return cli.CallTimeoutError(pl.r.opts.Timeout).SetRan(warmStderr)
	case errors.Is(err, context.Canceled):
		return cli.CancelledError("the call was cancelled before gemini finished, and gemini was stopped", err).SetRan(warmStderr)
	case errors.Is(err, errOutputTooBig):
		return cli.OutputTooBigError(pl.r.opts.MaxOutputBytes).SetRan(warmStderr)
	case errors.Is(err, errProcessGone):
		// err says how the process ended, after errProcessGone's text.
		how := strings.TrimPrefix(err.Error(), errProcessGone.Error())
		return cli.FailedError("the warm gemini process exited during the call"+how+". Its sessions continue through one-shot resume; try again", err).SetRan(warmStderr)
	}
	return cli.FailedError("gemini --acp failed: "+err.Error()+". "+warmFailedHelp, err).SetRan(warmStderr)
}

// warmStderr stands where a one-shot failure shows the CLI's stderr: a
// warm process's stderr is shared by every session it serves, so none of
// it goes into one call's result (it is in the server's log at debug).
const warmStderr = "(none: the call ran in a warm gemini --acp process)"

// acpAuthRequired is ACP's error code for missing credentials: the CLI
// starts without them, and answers session/new with it.
const acpAuthRequired = -32000

// classifyRPC maps an ACP error to the same kinds and reasons as the
// one-shot path. API failures carry the HTTP status as their code; no
// process exited, so the reasons name no exit code.
func classifyRPC(re *rpcError) *backend.Error {
	var e *backend.Error
	switch {
	case re.Code == acpAuthRequired:
		e = cli.AuthError(re.Message, "")
	case re.Code >= 100 && re.Code <= 599:
		out := &cli.Output{Error: &cli.OutputError{Type: "Error", Message: re.Message, Code: []byte(fmt.Sprint(re.Code))}}
		msg, status := cli.FailureMessage(out, "")
		e = cli.APIError(status, msg, "")
	default:
		e = cli.FailedError("gemini --acp failed: "+re.Error()+". "+warmFailedHelp, nil)
	}
	e.Err = re
	return e.SetRan(warmStderr)
}

// warmFailedHelp says what to do about a warm failure the CLI did not
// explain.
const warmFailedHelp = "Try again; if it persists, run the server with --backend oneshot, " +
	"whose errors carry the CLI's stderr"

// idleFor is how long p has run no prompt.
func (p *acpProc) idleFor() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inflight > 0 {
		return 0
	}
	return time.Since(p.lastUsed)
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

// spare is a session created ahead of time in one process and cwd, so that
// a new chat skips session/new, by far the largest part of a warm chat's
// time. Its context is frozen at creation (the CLI writes the date and the
// folder listing into the session at session/new), so it is used only
// within SpareAge, and its file is removed when it is discarded unused.
type spare struct {
	dir   string
	calls int           // the process's calls when it was asked for
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
				age := pl.now().Sub(s.made)
				switch {
				case age >= pl.opts.SpareAge:
					pl.discard(p, s)
				case s.file != "" && !fileExists(s.file):
					pl.r.log.Debug("a spare session's file was removed (by another gemini run's start-up clean-up); making a new session", "pid", p.cmd.Process.Pid, "session", s.id)
				default:
					pl.r.log.Debug("a new chat uses a spare session", "pid", p.cmd.Process.Pid, "session", s.id, "age", age)
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
// It returns the spare being made, or nil.
func (pl *pool) refill(p *acpProc, dir string) *spare {
	if pl.opts.SpareAge < 0 {
		return nil
	}
	p.mu.Lock()
	ok := p.inflight == 0 && !p.draining && !p.replacing && p.alive() && p.spares[dir] == nil && p.sessions < pl.opts.MaxSessions
	var s *spare
	if ok {
		s = &spare{dir: dir, calls: p.calls, ready: make(chan struct{})}
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
	made := pl.now()
	// newSession's try: when a call holds the session-creation lock, no
	// spare is made (that call's end asks again), so a spare never queues
	// before a call.
	id, err := p.newSession(ctx, s.dir, true)
	s.id, s.made, s.err = id, made, err
	if err == nil {
		s.file = sessionFile(p.home, id)
	}
	close(s.ready)
	if err != nil {
		p.mu.Lock()
		if p.spares[s.dir] == s {
			delete(p.spares, s.dir)
		}
		p.mu.Unlock()
		if !errors.Is(err, errCreating) && p.alive() {
			pl.r.log.Debug("could not make a spare session", "pid", p.cmd.Process.Pid, "err", err)
		}
	}
}

// expireSpares discards p's spares older than SpareAge, and makes a new
// one for each dir p served a call in since (an idle process keeps no
// fresh spare for long: it makes at most one more).
func (pl *pool) expireSpares(p *acpProc) {
	now := pl.now()
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
		if calls > s.calls {
			pl.refill(p, s.dir)
		}
	}
}

// discard forgets a spare session that no call used. The process keeps it
// in memory (the CLI frees no session); its file goes.
func (pl *pool) discard(p *acpProc, s *spare) {
	removed, err := removeSessionFile(p.home, s.id)
	pl.r.log.Debug("discarded a spare session", "pid", p.cmd.Process.Pid, "session", s.id, "fileRemoved", removed, "err", err)
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

// maxSessionFile bounds the size of a file removeSessionFile reads: an
// unused session's file is about 2 KB.
const maxSessionFile = 64 << 10

// sessionFiles are the files of session id in the CLI's store under home
// (see removeSessionFile).
func sessionFiles(home, id string) ([]string, error) {
	if home == "" || !session.IsUUID(id) {
		return nil, nil
	}
	return filepath.Glob(filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*-"+id[:8]+".jsonl"))
}

// sessionFile is the file of session id in the CLI's store under home, ""
// if there is none.
func sessionFile(home, id string) string {
	files, _ := sessionFiles(home, id)
	if len(files) == 0 {
		return ""
	}
	return files[0]
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// removeSessionFile removes the file that an unused session left in the
// CLI's store under home (the CLI's home: GEMINI_CLI_HOME, else HOME):
// .gemini/tmp/<project>/chats/session-<time>-<first 8 of id>.jsonl. It
// removes only a file every record of which is this session's header or
// the context the CLI writes at session/new, so it never touches another
// session or one that holds a turn. It reports whether it removed one.
func removeSessionFile(home, id string) (bool, error) {
	files, err := sessionFiles(home, id)
	if err != nil {
		return false, err
	}
	removed := false
	for _, f := range files {
		if fi, err := os.Lstat(f); err != nil || !fi.Mode().IsRegular() || fi.Size() > maxSessionFile {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil || !unusedSessionFile(data, id) {
			continue
		}
		if err := os.Remove(f); err != nil {
			return removed, err
		}
		removed = true
	}
	return removed, nil
}

// unusedSessionFile reports whether data, a CLI session file, holds
// nothing but session id's headers and its start-up context.
func unusedSessionFile(data []byte, id string) bool {
	headers := 0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var rec struct {
			SessionID *string `json:"sessionId"`
			Set       *struct {
				Messages []struct {
					Type    string `json:"type"`
					Content []struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"messages"`
			} `json:"$set"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil {
			return false
		}
		switch {
		case rec.SessionID != nil && rec.Set == nil:
			if !strings.EqualFold(*rec.SessionID, id) {
				return false
			}
			headers++
		case rec.Set != nil && rec.SessionID == nil:
			for _, m := range rec.Set.Messages {
				if m.Type != "user" || len(m.Content) != 1 || !strings.HasPrefix(m.Content[0].Text, "<session_context>") {
					return false
				}
			}
		default:
			return false
		}
	}
	return headers > 0
}

package acp

import (
	"context"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/proc"
)

// This file is one long-lived `gemini --acp` process as the pool keeps
// it: its lifecycle, the calls that hold it, its spare sessions. The
// Agent Client Protocol spoken with it is its agent (agent.go), over the
// JSON-RPC connection to the child (rpcconn.go). One process serves many
// sessions, so a prompt costs milliseconds instead of a Node start-up.
// The measured behaviour it relies on, bugs included, is described in
// docs/backends.md, "Warm backend".

// acpProc is one `gemini --acp` process in the pool: the pool's
// bookkeeping of it, and the agent that speaks to it.
type acpProc struct {
	key   string // the system prompt it was started with ("" for none)
	agent *agent // the protocol spoken with the process

	mu       sync.Mutex
	inflight int // calls that hold the process (see use), not only prompts
	draining bool
	lastUsed time.Time // when the last prompt ended (or the process started)
	calls    int       // calls that held the process and ended
	// cliDir is the CLI's directory (clihome.Dir of the process's
	// environment), where it keeps session files; "" when none is known.
	cliDir string
	// spares are sessions created ahead of time, by cwd, so that a new
	// chat does not wait for session/new (see pool.session).
	spares map[string]*spare
	// replacing is set once a replacement for this process is starting;
	// the process serves on until the replacement is ready.
	replacing bool
	// cmdline and system are what the process was started with, for its
	// replacement.
	cmdline geminicli.Command
	system  string
}

// startACP starts `gemini --acp` and completes the initialize handshake.
// sysDir, the temporary directory of its system prompt, is removed when
// the process ends.
func startACP(ctx context.Context, cmdline geminicli.Command, args []string, env []string, key, sysDir string, allow bool, maxOutput int, log *slog.Logger) (*acpProc, error) {
	now := time.Now()
	a := newAgent(allow, maxOutput, log)
	prog := proc.Program{Path: cmdline.Path, Args: append(append([]string{}, cmdline.Args...), args...), Env: env}
	if err := a.start(ctx, prog, sysDir); err != nil {
		return nil, err
	}
	log.Info("warm gemini process started", "pid", a.conn.pid(), "agentVersion", a.version, "systemPrompt", key != "", "startup", time.Since(now).Round(time.Millisecond))
	return &acpProc{key: key, agent: a, lastUsed: now, spares: map[string]*spare{}}, nil
}

// use reserves the process for one call, unless it is draining or gone:
// a draining process takes no new work, and is stopped only when no call
// holds it, so a call that holds it is never cut off by a recycle.
func (p *acpProc) use() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.draining || !p.alive() {
		return false
	}
	p.inflight++
	return true
}

// done ends a call's hold on the process at now, and stops a draining
// process when the last hold ends.
func (p *acpProc) done(now time.Time) {
	p.mu.Lock()
	p.inflight--
	p.calls++
	p.lastUsed = now
	stop := p.draining && p.inflight == 0
	p.mu.Unlock()
	if stop {
		go p.kill()
	}
}

// alive says whether the process runs.
func (p *acpProc) alive() bool { return p.agent.conn.alive() }

// exited is closed when the process has exited and been reaped.
func (p *acpProc) exited() <-chan struct{} { return p.agent.conn.done() }

// pid is the process's id, for the log.
func (p *acpProc) pid() int { return p.agent.conn.pid() }

// kill stops the process (its whole group) and waits for it.
func (p *acpProc) kill() { p.agent.conn.kill() }

// rss is the process's resident memory in bytes, where the system tells
// (Linux); 0 elsewhere.
func (p *acpProc) rss() int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid()) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

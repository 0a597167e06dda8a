package acp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/proc"
)

// This file is one long-lived `gemini --acp` process as the pool keeps
// it: the Agent Client Protocol (ACP) spoken over its connection
// (rpcConn), and the pool's bookkeeping of it (its calls, prompts,
// sessions and spares). One process serves many sessions, so a prompt
// costs milliseconds instead of a Node start-up. The measured behaviour it
// relies on, bugs included, is described in docs/backends.md, "Warm
// backend".

// acpProc is one `gemini --acp` process.
type acpProc struct {
	key     string   // the system prompt it was started with ("" for none)
	conn    *rpcConn // the process and the JSON-RPC spoken with it
	log     *slog.Logger
	allow   bool // answer permission requests with allow (approval mode yolo)
	started time.Time
	// maxOutput caps one prompt's answer, as --max-output-bytes caps a
	// one-shot call's stdout.
	maxOutput int

	newMu ctxLock // session/new (and load) one at a time: they contend on projects.json

	mu           sync.Mutex
	subs         map[string]*promptSub // by session id, while a prompt runs
	models       map[string]string     // session id → the model set on it ("" = the agent's default)
	defaultModel string                // currentModelId of a new session
	prompts      int                   // prompts answered
	inflight     int                   // calls that hold the process (see use), not only prompts
	draining     bool
	lastUsed     time.Time // when the last prompt ended (or the process started)
	sessions     int       // sessions created (never freed by the CLI), spares included
	calls        int       // calls that held the process and ended
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

// promptSub collects a running prompt's session/update notifications.
type promptSub struct {
	mu   sync.Mutex
	text strings.Builder
	obs  backend.Observer
	// tooBig is closed when the answer passes the cap; the prompt is then
	// cancelled and the rest of its answer dropped.
	tooBig   chan struct{}
	overflow bool
}

// overflowed records that the answer passed its cap; sub.mu must be held.
func (sub *promptSub) overflowed() {
	if !sub.overflow {
		sub.overflow = true
		sub.text.Reset()
		close(sub.tooBig)
	}
}

// errOutputTooBig says a prompt's answer passed --max-output-bytes.
var errOutputTooBig = errors.New("the answer passed the output limit")

// startACP starts `gemini --acp` and completes the initialize handshake.
// sysDir, the temporary directory of its system prompt, is removed when
// the process ends.
func startACP(ctx context.Context, cmdline geminicli.Command, args []string, env []string, key, sysDir string, allow bool, maxOutput int, log *slog.Logger) (*acpProc, error) {
	stderr := proc.NewTailBuffer(stderrKeep)
	p := &acpProc{newMu: newCtxLock(), key: key, log: log, allow: allow, maxOutput: maxOutput, started: time.Now(), lastUsed: time.Now(),
		subs: map[string]*promptSub{}, models: map[string]string{}, spares: map[string]*spare{}}
	var atExit func()
	if sysDir != "" {
		atExit = func() { os.RemoveAll(sysDir) }
	}
	conn, err := dialRPC(proc.Program{Path: cmdline.Path, Args: append(append([]string{}, cmdline.Args...), args...), Env: env},
		stderr, maxOutput+lineSlack, p, atExit, log)
	if err != nil {
		return nil, err
	}
	p.conn = conn
	var init struct {
		ProtocolVersion int `json:"protocolVersion"`
		AgentInfo       struct {
			Version string `json:"version"`
		} `json:"agentInfo"`
	}
	// No fs capability: the agent then reads and writes the local disk
	// itself (advertising readTextFile breaks write_file to new files).
	err = conn.call(ctx, "initialize", map[string]any{
		"protocolVersion":    1,
		"clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": false, "writeTextFile": false}, "terminal": false},
		"clientInfo":         map[string]any{"name": "gemini-mcp-server", "version": "1"},
	}, &init)
	if err != nil {
		p.kill()
		return nil, fmt.Errorf("gemini --acp did not initialize: %w (stderr: %s)", err, strings.TrimSpace(proc.LastBytes(stderr.String(), 500)))
	}
	log.Info("warm gemini process started", "pid", conn.pid(), "agentVersion", init.AgentInfo.Version, "systemPrompt", key != "", "startup", time.Since(p.started).Round(time.Millisecond))
	return p, nil
}

// longLine handles a message too long to read, given its start. A message
// about a session whose prompt runs fails that prompt as too big (the
// process serves on); it reports false for any other message, which the
// process cannot go on without.
func (p *acpProc) longLine(start []byte, pid int) bool {
	m := sessionIDField.FindSubmatch(start)
	if m == nil {
		return false
	}
	p.mu.Lock()
	sub := p.subs[strings.ToLower(string(m[1]))]
	p.mu.Unlock()
	if sub == nil {
		return false
	}
	p.log.Warn("a warm gemini process sent a message past the output limit; stopping its prompt", "pid", pid, "limit", p.maxOutput)
	sub.mu.Lock()
	sub.overflowed()
	sub.mu.Unlock()
	return true
}

// sessionIDField finds the session id near the start of a session/update
// notification (params come before the update in what the CLI writes).
var sessionIDField = regexp.MustCompile(`"sessionId"\s*:\s*"([0-9A-Fa-f-]{36})"`)

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
func (p *acpProc) alive() bool { return p.conn.alive() }

// exited is closed when the process has exited and been reaped.
func (p *acpProc) exited() <-chan struct{} { return p.conn.done() }

// pid is the process's id, for the log.
func (p *acpProc) pid() int { return p.conn.pid() }

// kill stops the process (its whole group) and waits for it.
func (p *acpProc) kill() { p.conn.kill() }

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

// ctxLock is a mutex whose Lock gives up when the caller's context ends:
// a call waiting behind another's session/new, which a wedged CLI can
// hold until that call's own deadline, goes when it is cancelled.
type ctxLock chan struct{}

func newCtxLock() ctxLock { return make(ctxLock, 1) }

// Lock takes the lock, or returns ctx's error if ctx ends first.
func (l ctxLock) Lock(ctx context.Context) error {
	select {
	case l <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TryLock takes the lock if it is free.
func (l ctxLock) TryLock() bool {
	select {
	case l <- struct{}{}:
		return true
	default:
		return false
	}
}

// Unlock frees the lock.
func (l ctxLock) Unlock() { <-l }

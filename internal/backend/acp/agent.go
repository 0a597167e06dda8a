package acp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/proc"
)

// agent is the Agent Client Protocol (ACP) spoken with one `gemini --acp`
// process over its connection: the handshake, sessions, their models and
// prompts (turn.go), and what the agent sends unasked (updates.go; it is
// the connection's rpcHandler). It counts the sessions it made and the
// prompts it answered, which the pool recycles processes by.
type agent struct {
	conn    *rpcConn
	log     *slog.Logger
	allow   bool   // answer permission requests with allow (approval mode yolo)
	version string // the agent's version, from the handshake
	// maxOutput caps one prompt's answer, as --max-output-bytes caps a
	// one-shot call's stdout.
	maxOutput int

	newMu ctxLock // session/new (and load) one at a time: they contend on projects.json

	mu           sync.Mutex
	subs         map[string]*promptSub // by session id, while a prompt runs
	models       map[string]string     // session id → the model set on it ("" = the agent's default)
	defaultModel string                // currentModelId of a new session
	prompts      int                   // prompts answered
	sessions     int                   // sessions created (never freed by the CLI), spares included
}

// newAgent returns an agent not yet started.
func newAgent(allow bool, maxOutput int, log *slog.Logger) *agent {
	return &agent{newMu: newCtxLock(), log: log, allow: allow, maxOutput: maxOutput,
		subs: map[string]*promptSub{}, models: map[string]string{}}
}

// start starts prog and completes the initialize handshake. sysDir, the
// temporary directory of its system prompt, is removed when the process
// ends.
func (a *agent) start(ctx context.Context, prog proc.Program, sysDir string) error {
	stderr := proc.NewTailBuffer(stderrKeep)
	var atExit func()
	if sysDir != "" {
		atExit = func() { os.RemoveAll(sysDir) }
	}
	conn, err := dialRPC(prog, stderr, a.maxOutput+lineSlack, a, atExit, a.log)
	if err != nil {
		return err
	}
	a.conn = conn
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
		conn.kill()
		return fmt.Errorf("gemini --acp did not initialize: %w (stderr: %s)", err, strings.TrimSpace(proc.LastBytes(stderr.String(), 500)))
	}
	a.version = init.AgentInfo.Version
	return nil
}

// counts are the prompts the agent answered and the sessions it made.
func (a *agent) counts() (prompts, sessions int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.prompts, a.sessions
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

// longLine handles a message too long to read, given its start. A message
// about a session whose prompt runs fails that prompt as too big (the
// process serves on); it reports false for any other message, which the
// process cannot go on without.
func (a *agent) longLine(start []byte, pid int) bool {
	m := sessionIDField.FindSubmatch(start)
	if m == nil {
		return false
	}
	a.mu.Lock()
	sub := a.subs[strings.ToLower(string(m[1]))]
	a.mu.Unlock()
	if sub == nil {
		return false
	}
	a.log.Warn("a warm gemini process sent a message past the output limit; stopping its prompt", "pid", pid, "limit", a.maxOutput)
	sub.mu.Lock()
	sub.overflowed()
	sub.mu.Unlock()
	return true
}

// sessionIDField finds the session id near the start of a session/update
// notification (params come before the update in what the CLI writes).
var sessionIDField = regexp.MustCompile(`"sessionId"\s*:\s*"([0-9A-Fa-f-]{36})"`)

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

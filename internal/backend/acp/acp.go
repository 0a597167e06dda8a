package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/proc"
)

// This file speaks the Agent Client Protocol (ACP) to one long-lived
// `gemini --acp` process: newline-delimited JSON-RPC 2.0 over its stdin and
// stdout. One process serves many sessions, so a prompt costs milliseconds
// instead of a Node start-up. The measured behaviour it relies on, bugs
// included, is described in docs/backends.md, "Warm backend".

// rpcMessage is any JSON-RPC 2.0 message.
type rpcMessage struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *rpcError) Error() string {
	msg := e.Message
	// The CLI puts the useful part of an internal error in data.details.
	var data struct {
		Details string `json:"details"`
	}
	if json.Unmarshal(e.Data, &data) == nil && data.Details != "" {
		msg += ": " + data.Details
	}
	return fmt.Sprintf("%s (code %d)", msg, e.Code)
}

// errProcessGone says the ACP process ended while a request waited.
var errProcessGone = errors.New("the warm gemini process exited")

// lineSlack is what one message from the agent may carry on top of the
// answer cap (--max-output-bytes): its JSON envelope, a tool's output. A
// longer line is not read into memory (see readLine).
const lineSlack = 1 << 20

// longLinePrefix is how much of a line too long to read is kept, to learn
// which session it is about.
const longLinePrefix = 4 << 10

// acpProc is one `gemini --acp` process.
type acpProc struct {
	key     string // the system prompt it was started with ("" for none)
	cmd     *proc.Child
	sysDir  string // temp dir holding SYSTEM.md; removed when the process ends
	log     *slog.Logger
	allow   bool // answer permission requests with allow (approval mode yolo)
	started time.Time
	// maxOutput caps one prompt's answer, as --max-output-bytes caps a
	// one-shot call's stdout.
	maxOutput int

	writeMu sync.Mutex
	nextID  atomic.Int64
	newMu   ctxLock // session/new (and load) one at a time: they contend on projects.json

	mu           sync.Mutex
	pending      map[int64]chan rpcMessage
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

	dead    chan struct{} // closed when the process has exited and been reaped
	deadErr error
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
func startACP(ctx context.Context, cmdline geminicli.Command, args []string, env []string, key, sysDir string, allow bool, maxOutput int, log *slog.Logger) (*acpProc, error) {
	stderr := proc.NewTailBuffer(stderrKeep)
	cmd, err := proc.Start(proc.Program{Path: cmdline.Path, Args: append(append([]string{}, cmdline.Args...), args...), Env: env, Stderr: stderr})
	if err != nil {
		return nil, err
	}
	p := &acpProc{newMu: newCtxLock(), key: key, cmd: cmd, sysDir: sysDir, log: log, allow: allow, maxOutput: maxOutput, started: time.Now(), lastUsed: time.Now(),
		pending: map[int64]chan rpcMessage{}, subs: map[string]*promptSub{}, models: map[string]string{}, spares: map[string]*spare{}, dead: make(chan struct{})}
	go p.readLoop(cmd.Stdout, stderr)
	var init struct {
		ProtocolVersion int `json:"protocolVersion"`
		AgentInfo       struct {
			Version string `json:"version"`
		} `json:"agentInfo"`
	}
	// No fs capability: the agent then reads and writes the local disk
	// itself (advertising readTextFile breaks write_file to new files).
	err = p.call(ctx, "initialize", map[string]any{
		"protocolVersion":    1,
		"clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": false, "writeTextFile": false}, "terminal": false},
		"clientInfo":         map[string]any{"name": "gemini-mcp-server", "version": "1"},
	}, &init)
	if err != nil {
		p.kill()
		return nil, fmt.Errorf("gemini --acp did not initialize: %w (stderr: %s)", err, strings.TrimSpace(proc.LastBytes(stderr.String(), 500)))
	}
	log.Info("warm gemini process started", "pid", cmd.Process.Pid, "agentVersion", init.AgentInfo.Version, "systemPrompt", key != "", "startup", time.Since(p.started).Round(time.Millisecond))
	return p, nil
}

// readLoop dispatches everything the agent sends until it exits.
func (p *acpProc) readLoop(stdout io.Reader, stderr *proc.TailBuffer) {
	br := bufio.NewReaderSize(stdout, 64<<10)
	var buf []byte
	for {
		line, long, err := readLine(br, p.maxOutput+lineSlack, buf[:0])
		buf = line
		if long {
			if !p.longLine(line) {
				// Nothing can be answered without it: the stream cannot be
				// followed any more.
				p.log.Warn("stopping a warm gemini process that sent a message too long to read", "pid", p.cmd.Process.Pid, "limit", p.maxOutput+lineSlack, "start", msg.Clip(string(line), 200))
				_ = p.cmd.Kill()
				break
			}
			continue
		}
		if err != nil {
			break
		}
		var m rpcMessage
		if err := json.Unmarshal(line, &m); err != nil {
			p.log.Debug("ignoring a line from gemini --acp that is not JSON-RPC", "line", msg.Clip(string(line), 200))
			continue
		}
		switch {
		case m.Method != "" && len(m.ID) > 0:
			go p.answerRequest(m)
		case m.Method != "":
			p.notification(m)
		case len(m.ID) > 0:
			id, err := strconv.ParseInt(string(m.ID), 10, 64)
			if err != nil {
				continue
			}
			p.mu.Lock()
			ch := p.pending[id]
			delete(p.pending, id)
			p.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}
	exit := p.cmd.Wait()
	if p.sysDir != "" {
		os.RemoveAll(p.sysDir)
	}
	p.mu.Lock()
	p.deadErr = fmt.Errorf("%w (%s; stderr: %s)", errProcessGone, exit, strings.TrimSpace(proc.LastBytes(stderr.String(), 500)))
	// Dead before any call learns of the end: a call that fails on it
	// must not see p alive afterwards and send its next one here.
	close(p.dead)
	for id, ch := range p.pending {
		close(ch)
		delete(p.pending, id)
	}
	p.mu.Unlock()
}

func (p *acpProc) alive() bool {
	select {
	case <-p.dead:
		return false
	default:
		return true
	}
}

func (p *acpProc) write(m any) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	_, err = p.cmd.Stdin.Write(append(b, '\n'))
	return err
}

// call sends a request and waits for its response, ctx, or the process's
// end. result may be nil.
func (p *acpProc) call(ctx context.Context, method string, params any, result any) error {
	id := p.nextID.Add(1)
	ch := make(chan rpcMessage, 1)
	p.mu.Lock()
	if !p.alive() {
		p.mu.Unlock()
		return p.deadErr
	}
	p.pending[id] = ch
	p.mu.Unlock()
	raw, _ := json.Marshal(params)
	if err := p.write(rpcMessage{JSONRPC: "2.0", ID: json.RawMessage(strconv.FormatInt(id, 10)), Method: method, Params: raw}); err != nil {
		p.forgetPending(id)
		return fmt.Errorf("%w: %v", errProcessGone, err)
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return p.deadErr
		}
		if m.Error != nil {
			return m.Error
		}
		if result != nil && len(m.Result) > 0 {
			return json.Unmarshal(m.Result, result)
		}
		return nil
	case <-ctx.Done():
		p.forgetPending(id)
		return ctx.Err()
	}
}

func (p *acpProc) forgetPending(id int64) {
	p.mu.Lock()
	delete(p.pending, id)
	p.mu.Unlock()
}

func (p *acpProc) notify(method string, params any) error {
	raw, _ := json.Marshal(params)
	return p.write(rpcMessage{JSONRPC: "2.0", Method: method, Params: raw})
}

// longLine handles a message too long to read, given its start. A message
// about a session whose prompt runs fails that prompt as too big (the
// process serves on); it reports false for any other message, which the
// process cannot go on without.
func (p *acpProc) longLine(start []byte) bool {
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
	p.log.Warn("a warm gemini process sent a message past the output limit; stopping its prompt", "pid", p.cmd.Process.Pid, "limit", p.maxOutput)
	sub.mu.Lock()
	sub.overflowed()
	sub.mu.Unlock()
	return true
}

// sessionIDField finds the session id near the start of a session/update
// notification (params come before the update in what the CLI writes).
var sessionIDField = regexp.MustCompile(`"sessionId"\s*:\s*"([0-9A-Fa-f-]{36})"`)

// readLine reads one line into buf, without its newline. A line longer
// than max is not kept whole: readLine reads past it and returns its first
// longLinePrefix bytes with long set. err is set at the end of the stream
// (with any partial last line).
func readLine(br *bufio.Reader, max int, buf []byte) (line []byte, long bool, err error) {
	for {
		frag, err := br.ReadSlice('\n')
		switch {
		case long:
		case len(buf)+len(frag) > max:
			long = true
			if len(buf) > longLinePrefix {
				buf = buf[:longLinePrefix]
			}
			buf = append(buf, frag[:min(len(frag), longLinePrefix-len(buf))]...)
		default:
			buf = append(buf, frag...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == nil && !long {
			buf = buf[:len(buf)-1]
		}
		return buf, long, err
	}
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

// kill stops the process (its whole group) and waits for it.
func (p *acpProc) kill() {
	if !p.alive() {
		return // reaped already: its pid may belong to another process by now
	}
	p.cmd.Stop(0, backend.DefaultKillGrace)
	<-p.dead
}

// rss is the process's resident memory in bytes, where the system tells
// (Linux); 0 elsewhere.
func (p *acpProc) rss() int64 {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/status")
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

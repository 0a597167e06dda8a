package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// acpTimeout bounds every wait of the ACP tests for a message.
const acpTimeout = 20 * time.Second

// acpMsg is one message the fake wrote on stdout.
type acpMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *acpErr         `json:"error"`
	// seq is the message's position in everything the process wrote, and request its position
	// among the agent's requests (-1 for other messages); line is the line itself.
	seq     int
	request int
	line    string
}

type acpErr struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// update is the params of a session/update notification.
type update struct {
	SessionID string `json:"sessionId"`
	Update    struct {
		SessionUpdate string `json:"sessionUpdate"`
		Content       json.RawMessage
		ToolCallID    string          `json:"toolCallId"`
		Status        string          `json:"status"`
		Title         string          `json:"title"`
		Kind          string          `json:"kind"`
		Commands      json.RawMessage `json:"availableCommands"`
	} `json:"update"`
}

// text returns the text of a message chunk update.
func (u update) text() string {
	var c struct {
		Text string `json:"text"`
	}
	json.Unmarshal(u.Update.Content, &c)
	return c.Text
}

// acpProc is a running fake in --acp mode, driven as an ACP client would.
type acpProc struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *syncBuffer

	mu       sync.Mutex
	nextID   int
	msgs     []acpMsg
	changed  chan struct{} // closed and replaced whenever msgs grows or stdout ends
	eof      bool
	requests int // how many of the agent's requests nextRequest has returned
	received int // how many requests the agent has sent

	// exited is closed once stdout has ended and the process has been waited for, with the
	// outcome in waitErr.
	exited  chan struct{}
	waitErr error
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// startACP starts the fake with --acp and args, and reads its stdout in the background.
func (s *sandbox) startACP(args ...string) *acpProc {
	s.t.Helper()
	cmd := s.command(append([]string{"--acp"}, args...)...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	p := &acpProc{t: s.t, cmd: cmd, stdin: stdin, stderr: &syncBuffer{}, changed: make(chan struct{}), exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	go func() {
		// Wait only after stdout has ended, as os/exec requires.
		p.read(stdout)
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	s.t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// read records every line of stdout until it ends.
func (p *acpProc) read(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		m := acpMsg{line: sc.Text()}
		json.Unmarshal(sc.Bytes(), &m)
		p.mu.Lock()
		m.seq, m.request = len(p.msgs), -1
		if m.Method != "" && len(m.ID) > 0 {
			m.request = p.received
			p.received++
		}
		p.msgs = append(p.msgs, m)
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
	}
	p.mu.Lock()
	p.eof = true
	close(p.changed)
	p.mu.Unlock()
}

// waitFor waits until match finds a message at or after position from, and returns it. It fails
// the test when stdout ends or acpTimeout passes first.
func (p *acpProc) waitFor(what string, from int, match func(acpMsg) bool) acpMsg {
	p.t.Helper()
	deadline := time.After(acpTimeout)
	for {
		p.mu.Lock()
		for _, m := range p.msgs[min(from, len(p.msgs)):] {
			if match(m) {
				p.mu.Unlock()
				return m
			}
		}
		changed, eof := p.changed, p.eof
		p.mu.Unlock()
		if eof {
			p.t.Fatalf("stdout ended before %s\nstderr: %s", what, p.stderr)
		}
		select {
		case <-changed:
		case <-deadline:
			p.t.Fatalf("no %s after %v", what, acpTimeout)
		}
	}
}

// count returns how many messages the process has written so far.
func (p *acpProc) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.msgs)
}

// messages returns a copy of the messages written so far.
func (p *acpProc) messages() []acpMsg {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]acpMsg{}, p.msgs...)
}

// writeLine writes one line to the process's stdin.
func (p *acpProc) writeLine(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		p.t.Fatalf("writing to the fake: %v", err)
	}
}

// marshal encodes v or fails the test.
func (p *acpProc) marshal(v any) string {
	p.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		p.t.Fatal(err)
	}
	return string(b)
}

// send sends a request and returns its id.
func (p *acpProc) send(method string, params any) int {
	p.t.Helper()
	p.mu.Lock()
	p.nextID++
	id := p.nextID
	p.mu.Unlock()
	p.writeLine(p.marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
	return id
}

// notify sends a notification.
func (p *acpProc) notify(method string, params any) {
	p.t.Helper()
	p.writeLine(p.marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params}))
}

// reply answers one of the agent's requests.
func (p *acpProc) reply(id json.RawMessage, result any) {
	p.t.Helper()
	p.writeLine(p.marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result}))
}

// response waits for the response to the request with id.
func (p *acpProc) response(id int) acpMsg {
	p.t.Helper()
	want := fmt.Sprint(id)
	return p.waitFor("response to request "+want, 0, func(m acpMsg) bool {
		return m.Method == "" && string(m.ID) == want
	})
}

// call sends a request and waits for its response.
func (p *acpProc) call(method string, params any) acpMsg {
	p.t.Helper()
	return p.response(p.send(method, params))
}

// mustCall is call for requests that must succeed; it decodes the result into result unless
// result is nil.
func (p *acpProc) mustCall(method string, params, result any) acpMsg {
	p.t.Helper()
	m := p.call(method, params)
	if m.Error != nil {
		p.t.Fatalf("%s failed: %s", method, m.line)
	}
	if result != nil {
		if err := json.Unmarshal(m.Result, result); err != nil {
			p.t.Fatalf("%s result %s: %v", method, m.Result, err)
		}
	}
	return m
}

// sessionInfo is session/new's answer.
type sessionInfo struct {
	SessionID string `json:"sessionId"`
	Modes     struct {
		CurrentModeID string `json:"currentModeId"`
	} `json:"modes"`
	Models struct {
		CurrentModelID string `json:"currentModelId"`
	} `json:"models"`
}

// initialize performs the handshake.
func (p *acpProc) initialize() {
	p.t.Helper()
	p.mustCall("initialize", map[string]any{"protocolVersion": 1,
		"clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": false, "writeTextFile": false}, "terminal": false},
		"clientInfo":         map[string]any{"name": "test", "version": "0"}}, nil)
}

// newSession starts a session in cwd and returns session/new's answer.
func (p *acpProc) newSession(cwd string) sessionInfo {
	p.t.Helper()
	var info sessionInfo
	resp := p.mustCall("session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}}, &info)
	// The update that follows session/new unasked would otherwise count as the first prompt's.
	p.waitFor("available_commands_update", resp.seq, func(m acpMsg) bool {
		return strings.Contains(m.line, `"available_commands_update"`) && strings.Contains(m.line, info.SessionID)
	})
	return info
}

// promptParams are the params of session/prompt with one text block.
func promptParams(sessionID, text string) map[string]any {
	return map[string]any{"sessionId": sessionID, "prompt": []any{map[string]any{"type": "text", "text": text}}}
}

// turnResult is the outcome of one prompt: the response and the updates of its session that
// arrived between the request and the response.
type turnResult struct {
	resp    acpMsg
	updates []update
}

// stopReason returns the response's stopReason, or "" for an error.
func (r turnResult) stopReason() string {
	var res struct {
		StopReason string `json:"stopReason"`
	}
	json.Unmarshal(r.resp.Result, &res)
	return res.StopReason
}

// answer concatenates the agent_message_chunk texts of the turn.
func (r turnResult) answer() string {
	var b strings.Builder
	for _, u := range r.updates {
		if u.Update.SessionUpdate == "agent_message_chunk" {
			b.WriteString(u.text())
		}
	}
	return b.String()
}

// chunks counts the agent_message_chunk updates of the turn.
func (r turnResult) chunks() int {
	n := 0
	for _, u := range r.updates {
		if u.Update.SessionUpdate == "agent_message_chunk" {
			n++
		}
	}
	return n
}

// startPrompt sends a prompt and returns its request id and the position from which its updates
// count.
func (p *acpProc) startPrompt(sessionID, text string) (id, from int) {
	p.t.Helper()
	from = p.count()
	return p.send("session/prompt", promptParams(sessionID, text)), from
}

// finish waits for the prompt with id and collects its turn.
func (p *acpProc) finish(sessionID string, id, from int) turnResult {
	p.t.Helper()
	resp := p.response(id)
	return turnResult{resp: resp, updates: p.updates(sessionID, from, resp.seq)}
}

// prompt sends a prompt and waits for its turn.
func (p *acpProc) prompt(sessionID, text string) turnResult {
	p.t.Helper()
	id, from := p.startPrompt(sessionID, text)
	return p.finish(sessionID, id, from)
}

// mustAnswer is prompt for turns that must end normally; it returns the answer text.
func (p *acpProc) mustAnswer(sessionID, text string) string {
	p.t.Helper()
	r := p.prompt(sessionID, text)
	if r.stopReason() != "end_turn" {
		p.t.Fatalf("prompt %q answered %s", text, r.resp.line)
	}
	return r.answer()
}

// updates returns the session/update params for sessionID among messages [from, to).
func (p *acpProc) updates(sessionID string, from, to int) []update {
	var out []update
	for _, m := range p.messages()[from:to] {
		if m.Method != "session/update" {
			continue
		}
		var u update
		if json.Unmarshal(m.Params, &u) == nil && u.SessionID == sessionID {
			out = append(out, u)
		}
	}
	return out
}

// nextRequest waits for the next request the agent sends to the client.
func (p *acpProc) nextRequest(method string) acpMsg {
	p.t.Helper()
	p.mu.Lock()
	n := p.requests
	p.requests++
	p.mu.Unlock()
	m := p.waitFor("request "+method, 0, func(m acpMsg) bool { return m.request == n })
	if m.Method != method {
		p.t.Fatalf("the agent sent %s, want %s", m.line, method)
	}
	return m
}

// closeStdin ends the process's input and waits for it to exit, returning its exit code.
func (p *acpProc) closeStdin() int {
	p.t.Helper()
	p.stdin.Close()
	return p.waitExit()
}

// waitExit waits for the process to exit and returns its exit code.
func (p *acpProc) waitExit() int {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(acpTimeout):
		p.t.Fatalf("the fake did not exit within %v", acpTimeout)
	}
	var exitErr *exec.ExitError
	switch {
	case p.waitErr == nil:
		return 0
	case errors.As(p.waitErr, &exitErr):
		return exitErr.ExitCode()
	default:
		p.t.Fatalf("waiting for the fake: %v", p.waitErr)
		return -1
	}
}

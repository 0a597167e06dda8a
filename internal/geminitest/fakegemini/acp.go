package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// acpServer is the long-lived mode, gemini --acp: newline-delimited JSON-RPC 2.0 on stdin and
// stdout, serving any number of sessions until stdin ends. Requests are handled one at a time in
// the order they arrive, except session/prompt, which runs on its own goroutine so that prompts
// on different sessions overlap and session/cancel can reach a pending one.
type acpServer struct {
	out *acpWriter
	log *acpLogger
	inv invocation

	// model is the process's model (-m, else GEMINI_MODEL), "" for none; mode is the initial
	// mode of every session (from -y and --approval-mode).
	model string
	mode  string
	// system is the GEMINI_SYSTEM_MD content, read once at start-up as the real CLI does;
	// systemErr is why it could not be read, which fails initialize, session/new and session/load.
	system    string
	systemErr string

	mu       sync.Mutex
	sessions map[string]*acpSession
	// nextRequest is the id of the agent's next request to the client; waiting holds the requests
	// that await the client's answer.
	nextRequest int
	waiting     map[int]chan rpcIncoming
}

// runACP serves ACP on stdin and stdout until stdin ends, which ends the process cleanly.
func runACP(opts *options, inv invocation) error {
	s := &acpServer{
		out:      &acpWriter{w: os.Stdout},
		model:    opts.model,
		mode:     initialMode(opts),
		sessions: map[string]*acpSession{},
		waiting:  map[int]chan rpcIncoming{},
	}
	if s.model == "" {
		s.model = os.Getenv("GEMINI_MODEL")
	}
	path, system, err := readSystemMd(inv.Cwd)
	inv.SystemMdPath, inv.SystemMd, s.system = path, system, system
	if err != nil {
		s.systemErr = fmt.Sprintf("Failed to initialize chat: missing system prompt file '%s'", path)
	}
	s.inv = inv
	if os.Getenv(geminitest.EnvNoAPIKey) == "1" {
		// The real CLI says so on stderr at start, and serves on.
		fmt.Fprintln(os.Stderr, "Error authenticating: Error: "+failureFor(41).Message)
	}
	if err := writeLog(inv); err != nil {
		return err
	}
	s.log, err = openACPLog()
	if err != nil {
		return err
	}
	return s.serve(os.Stdin)
}

// initialMode is the mode a session starts in: what -y or --approval-mode chose, in ACP's words.
func initialMode(opts *options) string {
	switch {
	case opts.yolo || opts.approval == "yolo":
		return "yolo"
	case opts.approval == "auto_edit":
		return "autoEdit"
	case opts.approval == "plan":
		return "plan"
	default:
		return "default"
	}
}

// serve reads messages, one a line, until r ends.
func (s *acpServer) serve(r io.Reader) error {
	in := bufio.NewReader(r)
	for {
		line, err := in.ReadBytes('\n')
		if line = bytes.TrimSpace(line); len(line) > 0 {
			s.handle(line)
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("fake-gemini: reading stdin: %w", err)
		}
	}
}

// handle dispatches one message. Like the real CLI, it answers nothing to a line that is not a
// JSON-RPC message, and ignores notifications it does not know.
func (s *acpServer) handle(line []byte) {
	var m rpcIncoming
	err := json.Unmarshal(line, &m)
	s.log.write(line, &m, err)
	switch {
	case err != nil:
	case m.Method == "" && m.hasID():
		s.answered(m)
	case m.Method == "":
	case !m.hasID():
		if m.Method == "session/cancel" {
			s.cancel(m.Params)
		}
	default:
		s.request(m)
	}
}

// request handles one request from the client.
func (s *acpServer) request(m rpcIncoming) {
	var result any
	var rerr *rpcError
	switch m.Method {
	case "initialize":
		result, rerr = s.initialize()
	case "authenticate":
		result = struct{}{}
	case "session/new":
		s.newSession(m)
		return
	case "session/load":
		s.loadSession(m)
		return
	case "session/set_model":
		result, rerr = s.setModel(m.Params)
	case "session/set_mode":
		result, rerr = s.setMode(m.Params)
	case "session/prompt":
		s.startPrompt(m)
		return
	default:
		rerr = methodNotFound(m.Method)
	}
	s.respond(m.ID, result, rerr)
}

// respond answers the request with id.
func (s *acpServer) respond(id json.RawMessage, result any, rerr *rpcError) {
	resp := rpcResponse{JSONRPC: "2.0", ID: id, Error: rerr}
	if rerr == nil {
		resp.Result = result
	}
	s.out.send(resp)
}

// notify sends a session/update notification.
func (s *acpServer) notify(sessionID string, update any) {
	s.out.send(rpcRequest{JSONRPC: "2.0", Method: "session/update",
		Params: sessionUpdate{SessionID: sessionID, Update: update}})
}

// ask sends a request to the client, calls sent, and waits for the client's answer. Like the real
// CLI, it waits for as long as it takes; the self-timeout bounds that.
func (s *acpServer) ask(method string, params any, sent func()) rpcIncoming {
	s.mu.Lock()
	id := s.nextRequest
	s.nextRequest++
	ch := make(chan rpcIncoming, 1)
	s.waiting[id] = ch
	s.mu.Unlock()
	s.out.send(rpcRequest{JSONRPC: "2.0", ID: &id, Method: method, Params: params})
	sent()
	return <-ch
}

// answered routes the client's answer to one of the agent's requests.
func (s *acpServer) answered(m rpcIncoming) {
	var id int
	if json.Unmarshal(m.ID, &id) != nil {
		return
	}
	s.mu.Lock()
	ch := s.waiting[id]
	delete(s.waiting, id)
	s.mu.Unlock()
	if ch != nil {
		ch <- m
	}
}

// initialize answers the handshake.
func (s *acpServer) initialize() (any, *rpcError) {
	if s.systemErr != "" {
		return nil, internalError(s.systemErr)
	}
	version := os.Getenv(geminitest.EnvVersion)
	if version == "" {
		version = geminitest.DefaultVersion
	}
	return initializeResult{
		ProtocolVersion:   geminitest.ACPProtocolVersion,
		AuthMethods:       authMethodsJSON,
		AgentInfo:         agentInfo{Name: "gemini-cli", Title: "Gemini CLI", Version: version},
		AgentCapabilities: agentCapabilitiesJSON,
	}, nil
}

// acpWriter writes whole messages, one a line, to stdout; concurrent prompts share it.
type acpWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// send writes v as one line of compact JSON. Like JavaScript's JSON.stringify it leaves <, > and
// & unescaped.
func (o *acpWriter) send(v any) {
	o.writeRaw(encode(v, false))
}

// writeRaw writes data in one call, so that it cannot interleave with another message.
func (o *acpWriter) writeRaw(data []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.w.Write(data)
}

// acpLogger appends what the process receives to the file geminitest.EnvACPLog names; a nil
// acpLogger logs nothing.
type acpLogger struct {
	mu sync.Mutex
	f  *os.File
}

// openACPLog opens the ACP log, or returns nil when there is none.
func openACPLog() (*acpLogger, error) {
	path := os.Getenv(geminitest.EnvACPLog)
	if path == "" {
		return nil, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("fake-gemini: opening the ACP log: %w", err)
	}
	return &acpLogger{f: f}, nil
}

// write logs one received line: its parts when it parsed, else the raw text. One write per line
// with O_APPEND keeps the lines of concurrent processes whole.
func (l *acpLogger) write(line []byte, m *rpcIncoming, parseErr error) {
	if l == nil {
		return
	}
	entry := geminitest.ACPMessage{Pid: os.Getpid(), Time: time.Now()}
	if parseErr != nil {
		entry.Raw = string(line)
	} else {
		entry.ID, entry.Method, entry.Params, entry.Result, entry.Error = m.ID, m.Method, m.Params, m.Result, m.Error
	}
	data, err := json.Marshal(entry)
	if err != nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.f.Write(append(data, '\n')); err != nil {
		fmt.Fprintf(os.Stderr, "fake-gemini: writing the ACP log: %v\n", err)
	}
}

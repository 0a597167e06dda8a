package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/proc"
)

// This file is the connection to one `gemini --acp` process: the child
// and the newline-delimited JSON-RPC 2.0 it speaks over its stdin and
// stdout. It knows requests, responses and notifications, and the caps
// on what it reads, but nothing of sessions or of the pool; what the
// agent sends unasked goes to its rpcHandler.

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

// rpcHandler is what the connection's owner does with what the agent
// sends unasked. Its methods are called from the connection's read loop,
// one at a time (request on a goroutine of its own), from before dialRPC
// returns: they must not use the connection, nor block on its responses.
type rpcHandler interface {
	// notification handles a notification.
	notification(m rpcMessage)
	// request answers a request with a result or an error.
	request(m rpcMessage) (json.RawMessage, *rpcError)
	// longLine handles a message too long to read, given its start and
	// the child's pid; false stops the process, whose stream cannot be
	// followed any more.
	longLine(start []byte, pid int) bool
}

// rpcConn is a JSON-RPC connection to one child process. It is safe for
// concurrent use; it ends when the child does.
type rpcConn struct {
	child   *proc.Child
	log     *slog.Logger
	maxLine int // the longest message read into memory
	handler rpcHandler
	// atExit runs once the child has exited, before the connection says
	// it is dead.
	atExit func()

	writeMu sync.Mutex
	nextID  atomic.Int64

	mu      sync.Mutex
	pending map[int64]chan rpcMessage

	dead    chan struct{} // closed when the child has exited and been reaped
	deadErr error         // how it ended; set before dead is closed
}

// dialRPC starts the program, and reads what it sends until it exits,
// handing what it sends unasked to h. stderr keeps the tail of its
// stderr, to explain its end.
func dialRPC(prog proc.Program, stderr *proc.TailBuffer, maxLine int, h rpcHandler, atExit func(), log *slog.Logger) (*rpcConn, error) {
	prog.Stderr = stderr
	child, err := proc.Start(prog)
	if err != nil {
		return nil, err
	}
	c := &rpcConn{child: child, log: log, maxLine: maxLine, handler: h, atExit: atExit,
		pending: map[int64]chan rpcMessage{}, dead: make(chan struct{})}
	go c.readLoop(child.Stdout, stderr)
	return c, nil
}

// pid is the child's process id.
func (c *rpcConn) pid() int { return c.child.Process.Pid }

// done is closed when the child has exited and been reaped.
func (c *rpcConn) done() <-chan struct{} { return c.dead }

// err says how the child ended; nil while it runs.
func (c *rpcConn) err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadErr
}

// readLoop dispatches everything the agent sends until it exits.
func (c *rpcConn) readLoop(stdout io.Reader, stderr *proc.TailBuffer) {
	br := bufio.NewReaderSize(stdout, 64<<10)
	var buf []byte
	for {
		line, long, err := readLine(br, c.maxLine, buf[:0])
		buf = line
		if long {
			if !c.handler.longLine(line, c.pid()) {
				// Nothing can be answered without it: the stream cannot be
				// followed any more.
				c.log.Warn("stopping a warm gemini process that sent a message too long to read", "pid", c.pid(), "limit", c.maxLine, "start", msg.Clip(string(line), 200))
				_ = c.child.Kill()
				break
			}
			continue
		}
		if err != nil {
			break
		}
		var m rpcMessage
		if err := json.Unmarshal(line, &m); err != nil {
			c.log.Debug("ignoring a line from gemini --acp that is not JSON-RPC", "line", msg.Clip(string(line), 200))
			continue
		}
		switch {
		case m.Method != "" && len(m.ID) > 0:
			go c.answer(m)
		case m.Method != "":
			c.handler.notification(m)
		case len(m.ID) > 0:
			id, err := strconv.ParseInt(string(m.ID), 10, 64)
			if err != nil {
				continue
			}
			c.mu.Lock()
			ch := c.pending[id]
			delete(c.pending, id)
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}
	exit := c.child.Wait()
	if c.atExit != nil {
		c.atExit()
	}
	c.mu.Lock()
	c.deadErr = fmt.Errorf("%w (%s; stderr: %s)", errProcessGone, exit, strings.TrimSpace(proc.LastBytes(stderr.String(), 500)))
	// Dead before any call learns of the end: a call that fails on it
	// must not see the connection alive afterwards and send its next one
	// here.
	close(c.dead)
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	c.mu.Unlock()
}

// answer answers a request of the agent with what the handler says.
func (c *rpcConn) answer(m rpcMessage) {
	reply := rpcMessage{JSONRPC: "2.0", ID: m.ID}
	reply.Result, reply.Error = c.handler.request(m)
	_ = c.write(reply)
}

func (c *rpcConn) alive() bool {
	select {
	case <-c.dead:
		return false
	default:
		return true
	}
}

func (c *rpcConn) write(m any) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err = c.child.Stdin.Write(append(b, '\n'))
	return err
}

// call sends a request and waits for its response, ctx, or the process's
// end. result may be nil.
func (c *rpcConn) call(ctx context.Context, method string, params any, result any) error {
	id := c.nextID.Add(1)
	ch := make(chan rpcMessage, 1)
	c.mu.Lock()
	if !c.alive() {
		c.mu.Unlock()
		return c.deadErr
	}
	c.pending[id] = ch
	c.mu.Unlock()
	raw, _ := json.Marshal(params)
	if err := c.write(rpcMessage{JSONRPC: "2.0", ID: json.RawMessage(strconv.FormatInt(id, 10)), Method: method, Params: raw}); err != nil {
		c.forgetPending(id)
		// The cause is named, not wrapped: errProcessGone alone says what
		// happened to the call (a pipe error is no caller's timeout).
		return fmt.Errorf("%w: %v", errProcessGone, err) //nolint:errorlint // see above
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return c.err()
		}
		if m.Error != nil {
			return m.Error
		}
		if result != nil && len(m.Result) > 0 {
			return json.Unmarshal(m.Result, result)
		}
		return nil
	case <-ctx.Done():
		c.forgetPending(id)
		return ctx.Err()
	}
}

func (c *rpcConn) forgetPending(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// notify sends a notification.
func (c *rpcConn) notify(method string, params any) error {
	raw, _ := json.Marshal(params)
	return c.write(rpcMessage{JSONRPC: "2.0", Method: method, Params: raw})
}

// kill stops the child (its whole group) and waits for it.
func (c *rpcConn) kill() {
	if !c.alive() {
		return // reaped already: its pid may belong to another process by now
	}
	c.child.Stop(0, backend.DefaultKillGrace)
	<-c.dead
}

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
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == nil && !long {
			buf = buf[:len(buf)-1]
		}
		return buf, long, err
	}
}

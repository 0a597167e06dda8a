package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StdioOptions configures ServeStdio.
type StdioOptions struct {
	// In and Out are the client's end: stdin and stdout when nil.
	In  io.Reader
	Out io.Writer
	// MaxPromptBytes is --max-prompt-bytes, which the longest line read
	// follows (see stdioLineLimit).
	MaxPromptBytes int
	Log            *slog.Logger
}

// ServeStdio serves srv's one MCP session on o.In and o.Out until the
// client closes In (which calls endLife) or life ends. Every call's
// context is to end with life.
func ServeStdio(life context.Context, endLife func(), srv *mcp.Server, o StdioOptions) error {
	in := o.In
	if in == nil {
		in = os.Stdin
	}
	out := o.Out
	if out == nil {
		out = os.Stdout
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// The filter answers malformed lines itself, through the same
	// serialized writer as the SDK, so that a bad line costs the client
	// an error instead of the session; it also bounds a line's length, so
	// the SDK's own limit is off.
	w := &syncWriter{w: out}
	filter := newLineFilter(in, w, stdioLineLimit(o.MaxPromptBytes))
	filter.maxPrompt = o.MaxPromptBytes
	t := &mcp.IOTransport{Reader: &stdinReader{r: filter, onEOF: endLife}, Writer: nopWriteCloser{w}, MaxLineLength: -1}
	ss, err := srv.Connect(life, t, nil)
	if err != nil {
		return err
	}
	// The session ends when the client closes stdin; a signal (life) ends
	// it from this side. Either way the calls' contexts end with life.
	unhook := context.AfterFunc(life, func() { ss.Close() })
	defer unhook()
	err = ss.Wait()
	// Ending because the client left or a signal came is a clean stop,
	// whatever the SDK reports for the closed connection.
	if err == nil || life.Err() != nil || errors.Is(err, io.EOF) {
		log.Info("client disconnected; server stopping")
		return nil
	}
	return err
}

// stdinReader calls onEOF when its reader ends: for stdio, the client has
// gone.
type stdinReader struct {
	r     io.Reader
	onEOF func()
}

func (e *stdinReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.onEOF()
	}
	return n, err
}

func (e *stdinReader) Close() error {
	if c, ok := e.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// JSON-RPC error codes the stdio filter answers with.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// maxJSONDepth is below the SDK's own nesting limit (1000), past which its
// decoder fails and the SDK ends the session.
const maxJSONDepth = 512

// stdioLineLimit is the longest stdio line the server reads: a prompt and a
// system prompt at --max-prompt-bytes each, every byte escaped by JSON in the
// worst case (\u0000, six bytes), and room for the rest of the message.
func stdioLineLimit(maxPromptBytes int) int {
	return 12*maxPromptBytes + 1<<20
}

// syncWriter serializes whole writes, so that the SDK's messages and the
// filter's error answers never interleave on stdout: each of them is one
// Write of one complete line.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// lineFilter stands between stdin and the SDK's IOTransport. The SDK ends
// the whole session on the first line it cannot decode (not JSON, an empty
// batch, an invalid id or version, a response without result...), and with
// it the calls in flight. The filter passes on only lines the SDK can take,
// answers every other one itself with the JSON-RPC error the specification
// asks for, and never holds more than limit bytes of one line.
type lineFilter struct {
	r      *bufio.Reader
	closer io.Closer
	out    io.Writer // the writer the SDK writes through
	limit  int
	// maxPrompt is --max-prompt-bytes: a tool call's argument over it is
	// replaced by the marker of its size (see shrinkOversized).
	maxPrompt int
	pending   []byte // the rest of the line being handed to the SDK
	line      []byte
	err       error
}

func newLineFilter(in io.Reader, out io.Writer, limit int) *lineFilter {
	f := &lineFilter{r: bufio.NewReaderSize(in, 64<<10), out: out, limit: limit}
	if c, ok := in.(io.Closer); ok {
		f.closer = c
	}
	return f
}

func (f *lineFilter) Read(p []byte) (int, error) {
	for len(f.pending) == 0 {
		if f.err != nil {
			return 0, f.err
		}
		line, tooLong, err := f.readLine()
		f.err = err
		if tooLong {
			f.answer(errorResponse(sniffID(line), codeInvalidRequest,
				fmt.Sprintf("message longer than %d bytes (the limit follows --max-prompt-bytes); it was not read", f.limit)))
			f.release()
			continue
		}
		body := bytes.TrimSpace(line)
		if len(body) == 0 {
			continue
		}
		if shrunk, ok := shrinkOversized(body, f.maxPrompt); ok {
			// The line is a copy now: the long one's memory can go.
			body = shrunk
			f.release()
		}
		if resp := checkMessage(body); resp != nil {
			f.answer(resp)
			continue
		}
		// The SDK's decoder needs a newline after each value, also for a
		// last line that ended without one.
		f.pending = append(body, '\n')
	}
	n := copy(p, f.pending)
	f.pending = f.pending[n:]
	return n, nil
}

// readLine reads up to the next newline. A line over the limit is read to
// its end but not kept: tooLong is then set and line holds its first bytes.
// A line longer than the reader's buffer is kept in parts, joined once at
// its end (with room for the newline the SDK needs after it): growing one
// slice by append left four times the line in garbage.
func (f *lineFilter) readLine() (line []byte, tooLong bool, err error) {
	chunk, err := f.r.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		f.line = append(f.line[:0], chunk...)
		return f.line, false, err
	}
	parts := [][]byte{bytes.Clone(chunk)}
	n := len(chunk)
	for errors.Is(err, bufio.ErrBufferFull) {
		chunk, err = f.r.ReadSlice('\n')
		if n+len(chunk) > f.limit {
			tooLong = true
		}
		n += len(chunk)
		if !tooLong {
			parts = append(parts, bytes.Clone(chunk))
		}
	}
	if tooLong {
		// Keep the start: the id of the message is usually there.
		return parts[0], true, err
	}
	f.line = make([]byte, 0, n+1)
	for _, p := range parts {
		f.line = append(f.line, p...)
	}
	return f.line, false, err
}

// release gives back the memory of a long line.
func (f *lineFilter) release() {
	if cap(f.line) > 1<<20 {
		f.line = nil
	}
}

func (f *lineFilter) answer(resp []byte) {
	// A failed write means the client has gone; the next read sees it.
	f.out.Write(resp)
}

func (f *lineFilter) Close() error {
	if f.closer != nil {
		return f.closer.Close()
	}
	return nil
}

// checkMessage returns nil when the SDK can decode body (one JSON-RPC
// message), or else the error response to write.
func checkMessage(body []byte) []byte {
	if !json.Valid(body) {
		return errorResponse(nil, codeParseError, "parse error: the line is not one JSON value; send one JSON-RPC message per line")
	}
	if jsonDepth(body) > maxJSONDepth {
		return errorResponse(sniffID(body), codeInvalidRequest, fmt.Sprintf("invalid request: JSON nested deeper than %d levels", maxJSONDepth))
	}
	if body[0] == '[' {
		return batchResponse(body)
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(body, &msg) != nil {
		return errorResponse(nil, codeInvalidRequest, "invalid request: a JSON-RPC message is a JSON object")
	}
	rawID, hasID := msg["id"]
	id, idOK := validID(rawID)
	if hasID && !idOK {
		return errorResponse(nil, codeInvalidRequest, "invalid request: id must be a string or an integer")
	}
	var version string
	if json.Unmarshal(msg["jsonrpc"], &version) != nil || version != "2.0" {
		return errorResponse(id, codeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`)
	}
	if m, ok := msg["method"]; ok {
		var method string
		if json.Unmarshal(m, &method) != nil {
			return errorResponse(id, codeInvalidRequest, "invalid request: method must be a string")
		}
		return nil
	}
	// Without a method the message can only be a response to one of the
	// server's own requests: an id and exactly one of result and error.
	res, hasResult := msg["result"]
	e, hasError := msg["error"]
	hasResult = hasResult && string(res) != "null"
	hasError = hasError && string(e) != "null"
	if !hasID || hasResult == hasError {
		return errorResponse(id, codeInvalidRequest, "invalid request: a request needs a method, a response an id and either result or error")
	}
	if hasError {
		var we struct {
			Code    int64           `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		}
		if json.Unmarshal(e, &we) != nil {
			return errorResponse(id, codeInvalidRequest, "invalid request: error must be an object with a numeric code and a string message")
		}
	}
	return nil
}

// batchResponse answers a JSON-RPC batch. MCP 2025-06-18 removed batching
// and the SDK ends the session on a batch under that version, so the
// server refuses every batch: each request in it gets its own error, as
// the JSON-RPC specification asks.
func batchResponse(body []byte) []byte {
	var items []json.RawMessage
	if json.Unmarshal(body, &items) != nil || len(items) == 0 {
		return errorResponse(nil, codeInvalidRequest, "invalid request: empty batch")
	}
	const why = "invalid request: batches are not supported (MCP 2025-06-18 removed them); send one message per line"
	var out []json.RawMessage
	for _, it := range items {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method json.RawMessage `json:"method"`
		}
		if json.Unmarshal(it, &msg) != nil || msg.Method == nil {
			continue
		}
		if id, ok := validID(msg.ID); ok && id != nil {
			out = append(out, bytes.TrimSpace(errorResponse(id, codeInvalidRequest, why)))
		}
	}
	if len(out) == 0 {
		return errorResponse(nil, codeInvalidRequest, why)
	}
	b, _ := json.Marshal(out)
	return append(b, '\n')
}

// validID returns a JSON-RPC id (a string or an integer) in its JSON form,
// or nil and false. An absent id is nil and true.
func validID(raw json.RawMessage) (json.RawMessage, bool) {
	if raw == nil {
		return nil, true
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return nil, false
	}
	switch v := v.(type) {
	case string:
		return raw, true
	case json.Number:
		// The SDK keeps numeric ids as int64: a fraction or a larger
		// number would come back changed.
		if _, err := strconv.ParseInt(v.String(), 10, 64); err != nil {
			return nil, false
		}
		return raw, true
	}
	return nil, false
}

// sniffID looks for a valid top-level id in the start of a message that is
// too long or otherwise refused, so that the client can match the error to
// its request.
func sniffID(prefix []byte) json.RawMessage {
	d := json.NewDecoder(bytes.NewReader(prefix))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	for d.More() {
		key, err := d.Token()
		if err != nil {
			return nil
		}
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			return nil
		}
		if key == "id" {
			if id, ok := validID(raw); ok {
				return id
			}
			return nil
		}
	}
	return nil
}

// jsonDepth is the deepest nesting of objects and arrays in valid JSON.
func jsonDepth(b []byte) int {
	depth, deepest, inStr, esc := 0, 0, false, false
	for _, c := range b {
		switch {
		case inStr:
			if esc {
				esc = false
			} else if c == '\\' {
				esc = true
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// errorResponse is one JSON-RPC error response line; id nil stands for null.
func errorResponse(id json.RawMessage, code int, message string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, message}})
	return append(b, '\n')
}

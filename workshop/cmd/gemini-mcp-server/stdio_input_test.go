package main

import (
	"bufio"
	"bytes"
	"encoding/json"

	"io"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// rawStdio is a server spoken to in raw JSON-RPC lines, so that a test can
// send what no SDK client would.
type rawStdio struct {
	t      *testing.T
	stdin  io.WriteCloser
	lines  chan []byte
	stderr *geminitest.LockedBuffer
}

func startRawStdio(t *testing.T, e *env, args ...string) *rawStdio {
	t.Helper()
	cmd := e.command(args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &rawStdio{t: t, stdin: stdin, lines: make(chan []byte, 64), stderr: &geminitest.LockedBuffer{}}
	cmd.Stderr = r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(r.lines)
		br := bufio.NewReaderSize(stdout, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			if len(line) > 0 {
				r.lines <- line
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		stdin.Close()
		for range r.lines {
		}
		cmd.Wait()
		if t.Failed() {
			t.Logf("server stderr:\n%s", r.stderr.String())
		}
	})
	r.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	r.next()
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

func (r *rawStdio) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.stdin, line+"\n"); err != nil {
		r.t.Fatalf("writing to the server: %v (it has gone)", err)
	}
}

// rpcMessage is an answer of the server, or an array of them.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	raw []byte
}

// next returns the server's next line; stdout closing fails the test.
func (r *rawStdio) next() rpcMessage {
	r.t.Helper()
	select {
	case line, ok := <-r.lines:
		if !ok {
			r.t.Fatal("the server closed stdout: it has stopped")
		}
		var m rpcMessage
		if line[0] != '[' {
			if err := json.Unmarshal(line, &m); err != nil {
				r.t.Fatalf("server wrote %q: %v", line, err)
			}
		}
		m.raw = line
		return m
	case <-time.After(60 * time.Second):
		r.t.Fatal("no answer from the server within 60 s")
	}
	return rpcMessage{}
}

// TestStdioBadInputKeepsServing sends, while a call runs, each kind of line
// that used to end the process: every one gets its JSON-RPC error, and the
// server goes on answering, the running call included.
func TestStdioBadInputKeepsServing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := startRawStdio(t, e)
	r.send(`{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"chat","arguments":{"prompt":"[[sleep:3000]] in flight","model":"gemini-x"}}}`)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if inv, _ := geminitest.ReadLog(e.log); len(inv) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the CLI of the first call never started")
		}
	}
	huge := `{"jsonrpc":"2.0","id":"huge","method":"tools/call","params":{"name":"chat","arguments":{"prompt":"` + strings.Repeat("x", 20<<20) + `"}}}`
	cases := []struct {
		name, line string
		code       int
		id         string // the id echoed, as JSON
	}{
		{"not JSON", `this is not json`, -32700, "null"},
		{"truncated JSON", `{"jsonrpc":"2.0","id":5,"method":`, -32700, "null"},
		{"two values", `{"jsonrpc":"2.0","id":6,"method":"ping"} {}`, -32700, "null"},
		{"empty batch", `[]`, -32600, "null"},
		{"batch", `[{"jsonrpc":"2.0","id":7,"method":"ping"}]`, -32600, "7"},
		{"number", `42`, -32600, "null"},
		{"no method", `{"jsonrpc":"2.0","id":8}`, -32600, "8"},
		{"object id", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, -32600, "null"},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, -32600, "null"},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, -32600, "null"},
		{"version 1.0", `{"jsonrpc":"1.0","id":"v","method":"ping"}`, -32600, `"v"`},
		{"no version", `{"id":"nv","method":"ping"}`, -32600, `"nv"`},
		{"numeric method", `{"jsonrpc":"2.0","id":9,"method":5}`, -32600, "9"},
		{"bad error field", `{"jsonrpc":"2.0","id":10,"error":"x"}`, -32600, "10"},
		{"deep nesting", `{"jsonrpc":"2.0","id":11,"method":"ping","params":{"a":` + strings.Repeat("[", 2000) + strings.Repeat("]", 2000) + `}}`, -32600, "11"},
		{"20 MB line", huge, -32600, `"huge"`},
	}
	for _, c := range cases {
		r.send(c.line)
		m := r.next()
		if c.name == "batch" {
			var batch []rpcMessage
			if err := json.Unmarshal(m.raw, &batch); err != nil || len(batch) != 1 {
				t.Fatalf("%s: answer %s", c.name, m.raw)
			}
			m = batch[0]
		}
		if m.Error == nil || m.Error.Code != c.code || string(m.ID) != c.id {
			t.Errorf("%s: answer %.300s, want error %d with id %s", c.name, m.raw, c.code, c.id)
		}
	}
	// The session still works: a ping, a new call, and the call that was
	// running all along.
	r.send(`{"jsonrpc":"2.0","id":"ping","method":"ping"}`)
	r.send(`{"jsonrpc":"2.0","id":"after","method":"tools/call","params":{"name":"chat","arguments":{"prompt":"after the noise","model":"gemini-x"}}}`)
	want := map[string]string{
		`"ping"`:  "{}",
		`"after"`: geminitest.Answer(1, "gemini-x", "", "after the noise"),
		`"slow"`:  geminitest.Answer(1, "gemini-x", "", "[[sleep:3000]] in flight"),
	}
	for len(want) > 0 {
		m := r.next()
		w, ok := want[string(m.ID)]
		if !ok {
			continue // a notification
		}
		delete(want, string(m.ID))
		if m.Error != nil || !strings.Contains(string(m.Result), jsonString(w)) {
			t.Errorf("answer to %s: %.300s, want a result holding %q", m.ID, m.raw, w)
		}
	}
	if strings.Contains(r.stderr.String(), "server stopped") {
		t.Errorf("the server logged its end:\n%s", r.stderr.String())
	}
}

// jsonString is s as it appears inside a JSON string, without the quotes.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(bytes.Trim(b, `"`))
}

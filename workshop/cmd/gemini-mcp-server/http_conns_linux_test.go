package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const connsToken = "conns-token-0123456789"

// startLimited starts the server with its open-file limit (soft and hard)
// set to nofile, as a small deployment or a container may have it, and
// returns its address, pid and stderr.
func startLimited(t *testing.T, e *env, nofile int, args ...string) (addr string, pid int, log fmt.Stringer) {
	t.Helper()
	cmd := exec.Command("sh", append([]string{"-c", `ulimit -n ` + strconv.Itoa(nofile) + ` && exec "$0" "$@"`, serverBin, "--http", "127.0.0.1:0"}, args...)...)
	cmd.Env = append(e.vars, "GEMINI_MCP_TOKENS="+connsToken)
	cmd.Dir = e.work
	addr, _, stderr := startHTTPCmd(t, cmd)
	limits, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`Max open files\s+` + strconv.Itoa(nofile) + `\s+` + strconv.Itoa(nofile) + `\s`).Match(limits) {
		t.Fatalf("the server's limits are not as set:\n%s", limits)
	}
	return addr, cmd.Process.Pid, stderr
}

// dialFrom connects to addr from the loopback address from, so that a test
// can stand for many clients (Linux routes all of 127.0.0.0/8 to lo).
func dialFrom(t *testing.T, from, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: 30 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", from, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// checkServing shows that /healthz answers and that an authenticated
// client can open a session and run a call. The client's timeout is only a
// failure guard against a server that no longer answers.
func checkServing(t *testing.T, addr string) {
	t.Helper()
	hc := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := hc.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatalf("/healthz: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %s", resp.Status)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := &http.Client{Transport: authTransport(connsToken)}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "conns", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: client}, nil)
	if err != nil {
		t.Fatalf("an authenticated client cannot connect: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "still serving?"}})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %+v", err, res)
	}
}

// TestHTTPRefusedStalledBodiesClosedUnderLowFDLimit opens 300 connections,
// more than the server's 256 open files, each with an unauthenticated POST
// whose body never comes, to every path. Each must get its answer (401,
// or /healthz's 200, or 404) and be closed by the server at once (its body
// is not waited for), so that an authenticated client and /healthz are
// still served.
func TestHTTPRefusedStalledBodiesClosedUnderLowFDLimit(t *testing.T) {
	e := newEnv(t)
	addr, _, _ := startLimited(t, e, 256)
	// Every path: refused MCP requests, and those that need no token.
	paths := []struct {
		path   string
		status int
	}{{"/mcp", http.StatusUnauthorized}, {"/sse", http.StatusUnauthorized}, {"/healthz", http.StatusOK}, {"/elsewhere", http.StatusNotFound}}
	// At most window requests wait for their answer at once: fewer than
	// the server's connection cap (three quarters of its 256 files), at
	// which it makes room by closing the connection that has waited
	// longest, and a busy server may not have read the first requests
	// when the last arrive. The connections stay open on this side.
	// The deadline is a failure guard only: the server closes each
	// connection right after its answer, so every read ends at once.
	const window = 100
	deadline := time.Now().Add(60 * time.Second)
	var conns []net.Conn
	var readers []*bufio.Reader
	answer := func(i int) {
		t.Helper()
		conns[i].SetReadDeadline(deadline)
		resp, err := http.ReadResponse(readers[i], nil)
		if err != nil {
			t.Fatalf("connection %d: no answer: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if want := paths[i%len(paths)]; resp.StatusCode != want.status {
			t.Fatalf("connection %d: POST %s: %s, want %d", i, want.path, resp.Status, want.status)
		}
	}
	for i := range 300 {
		c := dialFrom(t, fmt.Sprintf("127.0.0.%d", 2+i%10), addr)
		head := "POST " + paths[i%len(paths)].path + " HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
		if i%3 == 0 {
			head += "Transfer-Encoding: chunked\r\n\r\n"
		} else {
			head += "Content-Length: 1000\r\n\r\n"
		}
		if _, err := c.Write([]byte(head)); err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		readers = append(readers, bufio.NewReader(c))
		if i >= window {
			answer(i - window)
		}
	}
	checkServing(t, addr)
	for i := len(conns) - window; i < len(conns); i++ {
		answer(i)
	}
	for i, br := range readers {
		conns[i].SetReadDeadline(deadline)
		if _, err := br.ReadByte(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("connection %d: the server kept the refused connection open waiting for its body (read: %v)", i, err)
		}
	}
}

// TestHTTPConnectionCapPerAddress: past --max-conns-per-ip connections from
// one address, a new one from it is closed unanswered, while the ones it
// holds and other addresses are served.
func TestHTTPConnectionCapPerAddress(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr, _ := startHTTP(t, e, "--max-conns-per-ip", "4")
	var held []net.Conn
	for range 4 {
		held = append(held, dialFrom(t, "127.0.0.2", addr))
	}
	// Connections are accepted in order: once this one is answered, the
	// four before it are in.
	checkHealthz(t, dialFrom(t, "127.0.0.1", addr), true)
	checkHealthz(t, dialFrom(t, "127.0.0.2", addr), false)
	for _, c := range held {
		checkHealthz(t, c, true)
	}
}

// checkHealthz sends GET /healthz on c and checks it is answered 200, or,
// when !served, that the connection is closed without an answer.
func checkHealthz(t *testing.T, c net.Conn, served bool) {
	t.Helper()
	c.SetDeadline(time.Now().Add(30 * time.Second)) // failure guard only
	_, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"))
	if err == nil {
		var resp *http.Response
		resp, err = http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil {
			resp.Body.Close()
			if !served {
				t.Fatalf("%s: answered %s past the per-address cap", c.LocalAddr(), resp.Status)
			}
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s: %s", c.LocalAddr(), resp.Status)
			}
			return
		}
	}
	if served || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: %v", c.LocalAddr(), err)
	}
}

// TestHTTPConnectionFloodUnderLowFDLimit holds 320 connections that never
// finish their headers, from 40 addresses, against a server limited to 256
// open files: the server must stay below its file limit (never failing
// to accept for lack of files), and /healthz and an authenticated client
// must still be served, the oldest waiting connections making room.
func TestHTTPConnectionFloodUnderLowFDLimit(t *testing.T) {
	e := newEnv(t)
	addr, _, log := startLimited(t, e, 256, "--max-conns-per-ip", "8")
	var wg sync.WaitGroup
	for i := range 40 {
		from := fmt.Sprintf("127.0.0.%d", 2+i)
		for range 8 {
			c := dialFrom(t, from, addr)
			wg.Go(func() {
				c.Write([]byte("POST /mcp HTTP/1.1\r\n"))
			})
		}
	}
	wg.Wait()
	checkServing(t, addr)
	if strings.Contains(log.String(), "too many open files") {
		t.Fatalf("the server ran out of files:\n%s", log)
	}
}

// vmHWM returns the peak resident memory of process pid, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`VmHWM:\s+(\d+) kB`).FindSubmatch(status)
	if m == nil {
		t.Fatalf("no VmHWM in:\n%s", status)
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb << 10
}

// TestHTTPChunkedBodyOverCapStaysSmall sends a 200 MiB chunked body, far
// over --max-body-bytes: the server must answer 413 having held no more
// than the cap of it in memory.
func TestHTTPChunkedBodyOverCapStaysSmall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr, pid, _ := startLimited(t, e, 1024)
	checkServing(t, addr)
	before := vmHWM(t, pid)
	const size = 200 << 20
	body := io.MultiReader(strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"`),
		io.LimitReader(repeatReader('a'), size))
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = -1 // chunked
	req.Header.Set("Authorization", "Bearer "+connsToken)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	// The server answers 413 and closes the connection before the body
	// ends, so the request is written on a connection of the test's own
	// and the answer read there while the write fails: an http.Client may
	// report the write's broken pipe instead of the answer.
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(120 * time.Second))
	written := make(chan struct{})
	go func() {
		defer close(written)
		req.Write(conn) // fails once the server has closed the connection
	}()
	defer func() { conn.Close(); <-written }()
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("%s, want 413", resp.Status)
	}
	// The default cap is about 12 MiB: holding it once is expected, as is
	// some slack; reading it with io.ReadAll took 31 MiB.
	if grew := vmHWM(t, pid) - before; grew > 20<<20 {
		t.Fatalf("the server's peak memory grew by %d MiB for a refused body", grew>>20)
	} else {
		t.Logf("peak memory grew by %.1f MiB", float64(grew)/(1<<20))
	}
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// Package redistest runs a real redis-server for tests: one per test, on a
// free loopback port, in the test's temp directory, with persistence off;
// or a Redis Cluster (StartCluster) or a master watched by sentinels
// (StartSentinel) of such servers.
// The server is the test's child (never daemonized), so that it can be
// killed mid-test like a crashed Redis, restarted on the same port, and is
// always killed and reaped when the test ends.
//
// A machine without redis-server skips the tests that need one, unless
// GEMINI_MCP_REDIS_REQUIRED=1 (scripts/test.sh sets it): then they fail,
// so that CI never passes without having run them.
package redistest

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// EnvRequired set to 1 turns a missing redis-server into a failure.
const EnvRequired = "GEMINI_MCP_REDIS_REQUIRED"

// startTimeout bounds how long a server may take to say it is ready. It is
// a failure guard only: on a busy machine a start takes milliseconds.
const startTimeout = 30 * time.Second

// Server is a running (or killed) redis-server.
type Server struct {
	t    testing.TB
	bin  string
	dir  string
	port int
	// conf, when set, is a configuration file the server reads first;
	// extra are arguments after the defaults (a cluster's, a replica's).
	conf  string
	extra func(s *Server) []string
	// ready, when set, is the log line that says the server is ready, if
	// not Redis's "Ready to accept connections".
	ready string

	mu   sync.Mutex
	proc *proc // nil once killed
}

// proc is one run of the server.
type proc struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process is reaped
	logged chan struct{} // closed when its log is read to the end
	log    *lockedBuffer
}

// Binary returns the path of redis-server, or skips t (fails it when
// EnvRequired is 1) when there is none.
func Binary(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err == nil {
		return bin
	}
	why := "redis-server is not on PATH (Debian: apt-get install redis-server; scripts/test.sh installs it)"
	if os.Getenv(EnvRequired) == "1" {
		t.Fatalf("%s, and %s=1 requires the Redis tests to run", why, EnvRequired)
		return ""
	}
	t.Skipf("%s: skipping; set %s=1 to make this a failure", why, EnvRequired)
	return ""
}

// Start starts a redis-server on a free port of 127.0.0.1 and returns once
// it accepts connections. It is killed and reaped when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return startWith(t, &Server{t: t, bin: Binary(t), dir: t.TempDir()})
}

// StartValkey starts a valkey-server as Start does a redis-server. Debian
// 12 has no Valkey package: without valkey-server on PATH it skips t,
// whatever EnvRequired says.
func StartValkey(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath("valkey-server")
	if err != nil {
		t.Skip("valkey-server is not on PATH: skipping the Valkey test")
	}
	return startWith(t, &Server{t: t, bin: bin, dir: t.TempDir()})
}

// startWith starts s on a free port.
func startWith(t testing.TB, s *Server) *Server {
	t.Helper()
	t.Cleanup(s.Kill)
	// Another process may take the free port between our probe and the
	// server's bind: then try another.
	var err error
	for range 5 {
		s.port, err = freePort()
		if err != nil {
			t.Fatalf("redistest: %v", err)
		}
		if err = s.start(); err == nil {
			return s
		}
	}
	t.Fatalf("redistest: %v", err)
	return nil
}

// Addr is the server's host:port.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// URL is the redis:// URL of the server's database db.
func (s *Server) URL(db int) string { return fmt.Sprintf("redis://%s/%d", s.Addr(), db) }

// Log returns what the current (or last) run of the server has logged.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return ""
	}
	return s.proc.log.String()
}

// Kill kills the server with SIGKILL, as a crash would, and reaps it. A
// killed server stays down until Restart. Killing a killed server does
// nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	<-p.exited
	<-p.logged
	s.mu.Lock()
	if s.proc == p {
		s.proc = nil
	}
	s.mu.Unlock()
}

// Running reports whether the server has been started and not killed.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc != nil
}

// Restart starts the server again on the same port (killing it first if
// it runs), with an empty database (persistence is off), and returns once
// it accepts connections.
func (s *Server) Restart() {
	s.t.Helper()
	s.Kill()
	if err := s.start(); err != nil {
		s.t.Fatalf("redistest: restart: %v", err)
	}
}

// start runs the server on s.port and waits until its log says it is
// ready, or it exits.
func (s *Server) start() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	var args []string
	if s.conf != "" {
		args = append(args, s.conf)
	}
	args = append(args,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--daemonize", "no",
		"--dir", s.dir,
		"--logfile", "",
	)
	if s.extra != nil {
		args = append(args, s.extra(s)...)
	} else {
		args = append(args, "--appendonly", "no")
	}
	cmd := exec.Command(s.bin, args...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = w, w
	setDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		r.Close()
		w.Close()
		return fmt.Errorf("starting %s: %w", s.bin, err)
	}
	w.Close()
	p := &proc{cmd: cmd, exited: make(chan struct{}), logged: make(chan struct{}), log: &lockedBuffer{}}
	ready := make(chan struct{})
	readyLine := "Ready to accept connections"
	if s.ready != "" {
		readyLine = s.ready
	}
	go func() {
		defer close(p.logged)
		defer r.Close()
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		signalled := false
		for sc.Scan() {
			p.log.write(sc.Text() + "\n")
			// Redis 7.0 logs "Ready to accept connections", later
			// versions add the listener's kind after it.
			if !signalled && strings.Contains(sc.Text(), readyLine) {
				signalled = true
				close(ready)
			}
		}
	}()
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case <-ready:
		s.mu.Lock()
		s.proc = p
		s.mu.Unlock()
		return nil
	case <-p.exited:
		<-p.logged
		return fmt.Errorf("redis-server on port %d exited before it was ready (%v); its log:\n%s", s.port, cmd.ProcessState, p.log.String())
	case <-timer.C:
		_ = cmd.Process.Kill()
		<-p.exited
		<-p.logged
		return fmt.Errorf("redis-server on port %d not ready after %v; its log:\n%s", s.port, startTimeout, p.log.String())
	}
}

// freePort returns a port of 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) write(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.WriteString(s)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

package redistest

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// ping sends PING over a fresh connection and returns the reply line.
func ping(addr string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return "", err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

func TestStartKillRestart(t *testing.T) {
	s := Start(t)
	if got, err := ping(s.Addr()); err != nil || got != "+PONG" {
		t.Fatalf("PING: %q, %v; log:\n%s", got, err, s.Log())
	}
	if !strings.HasPrefix(s.URL(3), "redis://127.0.0.1:") || !strings.HasSuffix(s.URL(3), "/3") {
		t.Errorf("URL(3) = %q", s.URL(3))
	}
	s.Kill()
	if s.Running() {
		t.Error("Running after Kill")
	}
	if _, err := ping(s.Addr()); err == nil {
		t.Fatal("PING answered after Kill")
	}
	s.Kill() // a second kill does nothing
	addr := s.Addr()
	s.Restart()
	if s.Addr() != addr {
		t.Errorf("restarted on %s, not %s", s.Addr(), addr)
	}
	if got, err := ping(s.Addr()); err != nil || got != "+PONG" {
		t.Fatalf("PING after Restart: %q, %v; log:\n%s", got, err, s.Log())
	}
}

// recorder is a testing.TB that records Skipf and Fatalf instead of
// ending the test.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()                   {}
func (r *recorder) Skipf(f string, a ...any)  { r.skipped = fmt.Sprintf(f, a...) }
func (r *recorder) Fatalf(f string, a ...any) { r.failed = fmt.Sprintf(f, a...) }

func TestMissingServerSkipsOrFails(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(EnvRequired, "")
	r := &recorder{TB: t}
	Binary(r)
	if !strings.Contains(r.skipped, "redis-server is not on PATH") || r.failed != "" {
		t.Errorf("without %s: skipped %q, failed %q; want a skip", EnvRequired, r.skipped, r.failed)
	}
	t.Setenv(EnvRequired, "1")
	r = &recorder{TB: t}
	Binary(r)
	if !strings.Contains(r.failed, EnvRequired+"=1 requires") || r.skipped != "" {
		t.Errorf("with %s=1: skipped %q, failed %q; want a failure", EnvRequired, r.skipped, r.failed)
	}
}

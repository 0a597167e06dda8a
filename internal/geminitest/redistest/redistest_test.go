package redistest

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/leaktest"
)

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

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

func TestStartCluster(t *testing.T) {
	c := StartCluster(t, 3)
	if len(c.Nodes) != 3 || !strings.HasPrefix(c.URL(), "redis+cluster://127.0.0.1:") || strings.Count(c.URL(), ",") != 2 {
		t.Fatalf("nodes %d, URL %q", len(c.Nodes), c.URL())
	}
	out, err := command(t.Context(), c.Nodes[1].Addr(), "CLUSTER", "INFO")
	if err != nil || !strings.Contains(out, "cluster_slots_assigned:16384") || !strings.Contains(out, "cluster_size:3") {
		t.Fatalf("CLUSTER INFO: %v\n%s", err, out)
	}
}

func TestStartSentinel(t *testing.T) {
	st := StartSentinel(t, 1, 1)
	ctx := t.Context()
	addr, err := st.MasterAddr(ctx)
	if err != nil || addr != st.Master.Addr() {
		t.Fatalf("master %q, %v; want %s", addr, err, st.Master.Addr())
	}
	old, now, err := st.Failover(ctx)
	if err != nil {
		t.Fatalf("Failover: %v", err)
	}
	if old != st.Master || now != st.Replicas[0] {
		t.Fatalf("failover from %s to %s", old.Addr(), now.Addr())
	}
	if role, err := command(ctx, now.Addr(), "ROLE"); err != nil || !strings.HasPrefix(role, "master") {
		t.Fatalf("ROLE of the new master: %q, %v", role, err)
	}
}

package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var addrRE = regexp.MustCompile(`msg="serving MCP over HTTP" addr=(\S+)`)

// startHTTP starts the binary with --http on a free loopback port and
// returns its address once it listens.
func startHTTP(t *testing.T, e *env, args ...string) (addr string, stop func() error) {
	t.Helper()
	cmd := e.command(append([]string{"--http", "127.0.0.1:0"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			default:
			}
		}
		close(lines)
	}()
	timeout := time.After(10 * time.Second)
	for addr == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				cmd.Wait()
				t.Fatal("server exited before listening")
			}
			if m := addrRE.FindStringSubmatch(l); m != nil {
				addr = m[1]
			}
		case <-timeout:
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("server did not report its address")
		}
	}
	stopped := false
	stop = func() error {
		if stopped {
			return nil
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGTERM)
		return cmd.Wait()
	}
	t.Cleanup(func() { stop() })
	return addr, stop
}

func TestHTTPBinary(t *testing.T) {
	e := newEnv(t)
	tokenFile := filepath.Join(t.TempDir(), "tokens")
	os.WriteFile(tokenFile, []byte("# team tokens\nfirst-token-0123456789\n\nsecond-token-0123456789\n"), 0o600)
	addr, stop := startHTTP(t, e, "--token-file", tokenFile)

	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"version":"v9.8.7-test"`) {
		t.Fatalf("healthz %s", body)
	}
	client := &http.Client{Transport: authTransport("second-token-0123456789")}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bin-http", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: client}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "hello over http"}})
	if err != nil || res.IsError || res.Meta["sessionId"] == nil {
		t.Fatalf("chat: %v %+v", err, res)
	}
	cs.Close()
	// A connection that never carries a request, as HTTP clients keep
	// spare ones, must not hold the shutdown. The listener accepts in
	// order, so once a later connection is answered this one is accepted.
	spare, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer spare.Close()
	fresh := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	if resp, err := fresh.Get("http://" + addr + "/healthz"); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	start := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("shutdown took %v", d)
	}
}

type authTransport string

func (a authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(a))
	return http.DefaultTransport.RoundTrip(r)
}

func TestHTTPRefusesOpenRemoteBind(t *testing.T) {
	e := newEnv(t)
	cmd := e.command("--http", "0.0.0.0:0")
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() == 0 || !strings.Contains(string(out), "without authentication") {
		t.Fatalf("exit %d: %s", cmd.ProcessState.ExitCode(), out)
	}
	cmd = e.command("--http", "127.0.0.1:0", "--token-file", filepath.Join(t.TempDir(), "missing"))
	out, _ = cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() == 0 || !strings.Contains(string(out), "--token-file") {
		t.Fatalf("missing token file: exit %d: %s", cmd.ProcessState.ExitCode(), out)
	}
}

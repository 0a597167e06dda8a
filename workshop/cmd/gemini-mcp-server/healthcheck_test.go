package main

import (
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
)

// runHealthcheck runs `gemini-mcp-server healthcheck args...` and returns
// its exit code and output.
func runHealthcheck(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runHealthcheckEnv(t, "", args...)
}

// runHealthcheckEnv is runHealthcheck with GEMINI_MCP_HTTP=httpAddr.
func runHealthcheckEnv(t *testing.T, httpAddr string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(serverBin, append([]string{"healthcheck"}, args...)...)
	// Nothing else of the server's configuration is needed, nor read.
	cmd.Env = []string{"PATH=/nonexistent", "GEMINI_MCP_TOKENS=", "GEMINI_MCP_BACKEND=nonsense", "GEMINI_MCP_HTTP=" + httpAddr}
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if cmd.ProcessState == nil {
		t.Fatalf("healthcheck: %v", err)
	}
	return cmd.ProcessState.ExitCode(), so.String(), se.String()
}

// TestHealthcheckCommand: the healthcheck subcommand (the container
// image's HEALTHCHECK, which has no shell or curl) exits 0 against a
// running server's /healthz and 1, saying why, against a closed port, an
// error status, an answer that is not the server's, or a server that
// never answers; 2 on a usage error. Without --url it asks the server
// GEMINI_MCP_HTTP names, as the image's health check does.
func TestHealthcheckCommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	addr, _ := startHTTP(t, e)
	if code, stdout, stderr := runHealthcheck(t, "--url", "http://"+addr+"/healthz"); code != 0 || !strings.Contains(stdout, "ok") {
		t.Fatalf("healthy server: exit %d\n%s%s", code, stdout, stderr)
	}
	_, port, _ := net.SplitHostPort(addr)
	for _, listen := range []string{addr, "0.0.0.0:" + port, ":" + port} {
		if code, stdout, stderr := runHealthcheckEnv(t, listen); code != 0 || !strings.Contains(stdout, "http://127.0.0.1:"+port+"/healthz ok") {
			t.Errorf("GEMINI_MCP_HTTP=%s: exit %d\n%s%s", listen, code, stdout, stderr)
		}
	}

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedURL := "http://" + closed.Addr().String() + "/healthz"
	closed.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "down", http.StatusServiceUnavailable)
	}))
	defer failing.Close()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"status":"starting"}`))
	}))
	defer other.Close()
	// A server that accepts and never answers: the check gives up at its
	// timeout. The handler returns once the client has gone.
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer silent.Close()
	for _, c := range []struct {
		name string
		args []string
		says string
	}{
		{"closed port", []string{"--url", closedURL}, "connection refused"},
		{"error status", []string{"--url", failing.URL + "/healthz"}, "503"},
		{"not ok", []string{"--url", other.URL + "/healthz"}, `not {"status":"ok"}`},
		{"no answer", []string{"--url", silent.URL + "/healthz", "--timeout", "300ms"}, "no answer within 300ms"},
	} {
		code, stdout, stderr := runHealthcheck(t, c.args...)
		if code != 1 || !strings.Contains(stderr, c.says) {
			t.Errorf("%s: exit %d, want 1 saying %q\n%s%s", c.name, code, c.says, stdout, stderr)
		}
	}
	for _, args := range [][]string{
		{"--url", "ftp://127.0.0.1/healthz"},
		{"--url", "http://user:secret@127.0.0.1/healthz"},
		{"--timeout", "0s"},
		{"--nonsense"},
		{"extra"},
	} {
		code, stdout, stderr := runHealthcheck(t, args...)
		if code != 2 || strings.Contains(stderr+stdout, "secret") {
			t.Errorf("healthcheck %q: exit %d, want 2 (and no password shown)\n%s%s", args, code, stdout, stderr)
		}
	}
	for _, listen := range []string{"127.0.0.1:0", "127.0.0.1", "[::1]:http"} {
		code, stdout, stderr := runHealthcheckEnv(t, listen)
		if code != 2 || !strings.Contains(stderr, "GEMINI_MCP_HTTP") {
			t.Errorf("GEMINI_MCP_HTTP=%s: exit %d, want 2\n%s%s", listen, code, stdout, stderr)
		}
	}
	if code, stdout, stderr := runHealthcheck(t, "--help"); code != 0 || !strings.Contains(stdout, "Usage: gemini-mcp-server healthcheck") || !strings.Contains(stdout, "-timeout") {
		t.Errorf("healthcheck --help: exit %d\n%s%s", code, stdout, stderr)
	}
	// --url wins over the variable.
	if code, stdout, stderr := runHealthcheckEnv(t, "127.0.0.1:0", "--url", "http://"+addr+"/healthz"); code != 0 {
		t.Errorf("--url with GEMINI_MCP_HTTP unusable: exit %d\n%s%s", code, stdout, stderr)
	}
}

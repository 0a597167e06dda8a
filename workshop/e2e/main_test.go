// Package e2e runs the real Gemini CLI behind the real gemini-mcp-server
// binary, driven over stdio by the Go SDK's MCP client, with the CLI talking
// to a fake Gemini API on 127.0.0.1 (internal/geminitest/fakeapi).
//
// The CLI is the one named by $GEMINI_MCP_E2E_GEMINI, e.g.
//
//	npm install --prefix ~/.cache/gmcp-e2e @google/gemini-cli@0.61.0
//	GEMINI_MCP_E2E_GEMINI=~/.cache/gmcp-e2e/node_modules/.bin/gemini go test -race -v ./e2e/
//
// Without it the tests skip, except in CI ($CI set) or with
// GEMINI_MCP_E2E_REQUIRED=1, where they fail. The suite takes about four
// minutes: the CLI retries an HTTP 500 for more than three. With -short the
// CLI is told to try only twice, and the suite takes under a minute.
package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// serverBin is the server binary TestMain built; "" when the suite is
// skipped for want of a CLI.
var serverBin string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	flag.Parse()
	// The HTTP 500 scenario waits minutes for the CLI's retries while the
	// others run; unless told otherwise, let them all run at once even on a
	// machine with one or two CPUs.
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet && runtime.GOMAXPROCS(0) < 8 {
		flag.Set("test.parallel", "8")
	}
	if os.Getenv(fakeapi.EnvGemini) != "" {
		bin, cleanup, err := geminitest.BuildTestServer("e2e")
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2e:", err)
			return 1
		}
		defer cleanup()
		serverBin = bin
	}
	return m.Run()
}

// harness is one server process with its own fake API, CLI home, state
// directory and TMPDIR, and an MCP client session to it.
type harness struct {
	backend  string // as --backend spells it
	gemini   string // the real CLI
	api      *fakeapi.Server
	home     string // the CLI's HOME
	stateDir string // the server's --state-dir
	tmpDir   string // the server's (and so the CLI's) TMPDIR
	dir      string // the server's own directory: the default cwd
	cliEnv   []string
	// invocations is the file the server's --gemini writes a line to each
	// time it runs, on the API backend: that backend must run nothing.
	invocations string
	extraArgs   []string
	cmd         *exec.Cmd
	stderr      *geminitest.LockedBuffer
	session     *mcp.ClientSession
	closed      bool
	progressLog progressLog
}

// start starts the server on backend behind a fresh fake API. The server
// and the API stop when the test ends.
func start(t *testing.T, backend string, extraArgs ...string) *harness {
	t.Helper()
	h := &harness{backend: backend, gemini: fakeapi.RealCLI(t), extraArgs: extraArgs}
	if serverBin == "" {
		t.Fatal("the server binary was not built")
	}
	h.api = fakeapi.New()
	t.Cleanup(h.api.Close)
	// The API backend checks model names against the API's list: the
	// models the scenarios ask for are in it, as real ones would be.
	models := fakeapi.DefaultModels()
	for _, m := range []string{model, modelD} {
		models = append(models, fakeapi.Model{Name: "models/" + m, InputTokenLimit: 1 << 20, OutputTokenLimit: 8192,
			Methods: []string{"generateContent", "countTokens"}})
	}
	h.api.SetModels(models)
	h.home, h.stateDir, h.tmpDir, h.dir = t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()

	// The fake's environment holds GEMINI_API_KEY and
	// GOOGLE_GEMINI_BASE_URL: the CLI and the API backend both reach the
	// fake through them.
	h.cliEnv = append([]string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + h.tmpDir}, h.api.Home(t, h.home)...)
	if testing.Short() {
		// The CLI's general.maxAttempts (default 10, at most 10) bounds its
		// retries of an HTTP 500: 2 attempts take seconds, not 4 minutes.
		setGeneral(t, h.home, "maxAttempts", 2)
	}
	h.invocations = filepath.Join(t.TempDir(), "gemini-invocations")
	h.launch(t, backend)
	return h
}

// launch starts the harness's server, on backend, with its state
// directory, home and fake API as they are, and connects to it.
func (h *harness) launch(t *testing.T, backend string) {
	t.Helper()
	gemini := h.gemini
	if backend == "api" {
		// Whatever the API backend might start as the CLI leaves a trace.
		gemini = recorder(t, h.invocations, h.gemini)
	}
	h.cmd = exec.Command(serverBin, append([]string{"--backend", backend, "--gemini", gemini, "--state-dir", h.stateDir,
		"--timeout", serverTimeout, "--log-level", "debug"}, h.extraArgs...)...)
	// GODEBUG=execwait=2 makes the server report an exec.Cmd it never waited for.
	h.cmd.Env = append(append([]string{}, h.cliEnv...), "GODEBUG=execwait=2")
	h.cmd.Dir = h.dir
	h.stderr = &geminitest.LockedBuffer{}
	h.cmd.Stderr = h.stderr
	h.closed = false

	client := mcp.NewClient(&mcp.Implementation{Name: "gemini-mcp-server-e2e", Version: "0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: h.progressLog.add,
	})
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: h.cmd}, nil)
	if err != nil {
		t.Fatalf("connecting to the server: %v\nserver stderr:\n%s", err, h.stderr)
	}
	h.session = s
	stderr := h.stderr
	t.Cleanup(func() {
		if h.session == s && !h.closed {
			s.Close()
		}
		if t.Failed() {
			t.Logf("server stderr:\n%s", stderr)
		}
	})
}

// recorder writes a script that appends its arguments to file, then runs
// gemini with them.
func recorder(t *testing.T, file, gemini string) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "gemini")
	body := "#!/bin/sh\necho \"$*\" >> '" + file + "'\nexec '" + gemini + "' \"$@\"\n"
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

// shutdown closes the client session, which closes the server's stdin, and
// checks that the server exited cleanly with nothing suspicious on stderr.
func (h *harness) shutdown(t *testing.T) {
	t.Helper()
	h.closed = true
	start := time.Now()
	if err := h.session.Close(); err != nil {
		t.Errorf("server did not exit cleanly after stdin closed: %v", err)
	}
	// A guard against a server that hangs, not a measure of how fast it
	// stops (a busy machine makes that slow at times): the shutdown's
	// own limits are the kill grace and 5 s for the calls in flight.
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("server took %v to exit after stdin closed", d)
	}
	geminitest.CheckStderr(t, "server", h.stderr.String())
}

// call calls a tool and fails the test on a protocol error.
func (h *harness) call(t *testing.T, timeout time.Duration, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	start := time.Now()
	res, err := h.session.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error after %v: %v", tool, time.Since(start).Round(time.Millisecond), err)
	}
	t.Logf("%s answered in %v (isError=%v)", tool, time.Since(start).Round(time.Millisecond), res.IsError)
	return res
}

// setGeneral sets general.<key> in the CLI's settings.json under home.
func setGeneral(t *testing.T, home, key string, value any) {
	t.Helper()
	path := filepath.Join(home, ".gemini", "settings.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var settings map[string]any
	if err := json.Unmarshal(b, &settings); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	general, _ := settings["general"].(map[string]any)
	if general == nil {
		general = map[string]any{}
	}
	general[key] = value
	settings["general"] = general
	if b, err = json.Marshal(settings); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

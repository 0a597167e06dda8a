package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// sandbox is the private file system corner of one target in one section:
// its HOME, TMPDIR, working directory, our state directory, and the fake
// CLI's home and invocation log. Nothing of a run lands outside the bench's
// temporary directory.
type sandbox struct {
	root, home, tmp, work, state, fakeHome, fakeLog string
	// geminiDir goes first in PATH: it holds the `gemini` that every
	// server finds (the fake, or a link to the real CLI).
	geminiDir string
	extraEnv  []string
}

// newRealCLISandbox is a sandbox for the real Gemini CLI talking to the
// fake Gemini API at apiURL: the CLI's offline settings in its home, and
// the key and base URL in its environment.
func newRealCLISandbox(parent, name, geminiDir, apiURL string) (*sandbox, error) {
	sb, err := newSandbox(parent, name, geminiDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(sb.home, ".gemini"), 0o700); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(sb.home, ".gemini", "settings.json"), []byte(fakeapi.Settings), 0o600); err != nil {
		return nil, err
	}
	sb.extraEnv = []string{"GEMINI_API_KEY=bench-not-a-real-key", "GOOGLE_GEMINI_BASE_URL=" + apiURL}
	return sb, nil
}

// newSandbox is a sandbox in the bench's temporary directory, with the fake
// CLI's home under b.fakeHomes when set.
func (b *bench) newSandbox(name, geminiDir string) (*sandbox, error) {
	sb, err := newSandbox(b.tmp, name, geminiDir)
	if err == nil && b.fakeHomes != "" {
		sb.fakeHome = filepath.Join(b.fakeHomes, filepath.Base(sb.root))
	}
	return sb, err
}

func newSandbox(parent, name, geminiDir string) (*sandbox, error) {
	root, err := os.MkdirTemp(parent, slug(name)+"-")
	if err != nil {
		return nil, err
	}
	sb := &sandbox{
		root:      root,
		home:      filepath.Join(root, "home"),
		tmp:       filepath.Join(root, "tmp"),
		work:      filepath.Join(root, "work"),
		state:     filepath.Join(root, "state"),
		fakeHome:  filepath.Join(root, "fakehome"),
		fakeLog:   filepath.Join(root, "fake-invocations.jsonl"),
		geminiDir: geminiDir,
	}
	for _, d := range []string{sb.home, sb.tmp, sb.work, sb.state} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	// The fake keys sessions by os.Getwd, which resolves symlinks.
	if sb.work, err = filepath.EvalSymlinks(sb.work); err != nil {
		return nil, err
	}
	return sb, nil
}

// env is the whole environment a server runs with: nothing is inherited
// from the bench's own, so that credentials or GEMINI_* settings of the
// person running it cannot change a result.
func (sb *sandbox) env(extra []string) []string {
	path := sb.geminiDir + string(os.PathListSeparator) + os.Getenv("PATH")
	base := []string{
		"PATH=" + path,
		"HOME=" + sb.home,
		"TMPDIR=" + sb.tmp,
		"LANG=C.UTF-8",
	}
	base = append(base, geminitest.FakeEnv(sb.fakeHome, sb.fakeLog, 5*time.Minute)...)
	base = append(base, sb.extraEnv...)
	for _, kv := range extra {
		base = append(base, os.Expand(kv, func(k string) string {
			if k == "PATH" {
				return path
			}
			return "$" + k
		}))
	}
	return base
}

// resetFake forgets the fake CLI's sessions. The fake reads every stored
// session of a directory when it is given --session-id (which our server
// passes and the peers do not), so without this a long run would slow our
// calls down for a reason that is the fake's, not the server's.
func (sb *sandbox) resetFake() error { return os.RemoveAll(sb.fakeHome) }

func slug(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return strings.Trim(b.String(), "-")
}

// server is one running stdio MCP server with an SDK client session on it.
type server struct {
	t      *target
	sb     *sandbox
	cmd    *exec.Cmd
	cs     *mcp.ClientSession
	stderr *os.File
	closed bool
}

// startStdio starts t in sb and completes the MCP handshake. It returns
// the time from just before the process start to the end of the handshake.
func startStdio(ctx context.Context, t *target, sb *sandbox) (*server, time.Duration, error) {
	stderr, err := os.CreateTemp(sb.root, "stderr-*.log")
	if err != nil {
		return nil, 0, err
	}
	cmd := exec.Command(t.Path, t.Args...)
	if t.Ours {
		cmd.Args = append(cmd.Args, "--state-dir", sb.state)
	}
	cmd.Dir = sb.work
	cmd.Env = sb.env(t.Env)
	cmd.Stderr = stderr
	ownGroup(cmd)
	s := &server{t: t, sb: sb, cmd: cmd, stderr: stderr}
	client := mcp.NewClient(&mcp.Implementation{Name: "gemini-mcp-server-bench", Version: "1"}, nil)
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	start := time.Now()
	cs, err := client.Connect(cctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil)
	d := time.Since(start)
	if err != nil {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			killGroup(cmd.Process.Pid)
		}
		stderr.Close()
		return nil, 0, fmt.Errorf("%s: connecting: %w%s", t.Name, err, s.stderrTail())
	}
	s.cs = cs
	return s, d, nil
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// close ends the session (closing the server's stdin, then SIGTERM and
// SIGKILL if it lingers), waits for the server, and sweeps its process
// group.
func (s *server) close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.cs.Close()
	killGroup(s.cmd.Process.Pid)
	s.stderr.Close()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return fmt.Errorf("%s exited with %w%s", s.t.Name, ee, s.stderrTail())
	}
	return err
}

// stderrTail is the end of the server's stderr, for error messages.
func (s *server) stderrTail() string {
	data, err := os.ReadFile(s.stderr.Name())
	if err != nil || len(data) == 0 {
		return ""
	}
	return "\n" + s.t.Name + " stderr (tail):\n" + clip(string(data), -2000)
}

// call calls the target's chat tool and checks that the answer is the one
// the CLI gave for this very prompt (expect is a marker the fake CLI or the
// fake API echoes back), so that no server can pass by answering from a
// cache or returning nothing.
func (s *server) call(ctx context.Context, prompt, model, expect string, timeout time.Duration) (time.Duration, error) {
	return callTool(ctx, s.cs, s.t, prompt, model, expect, timeout)
}

func callTool(ctx context.Context, cs *mcp.ClientSession, t *target, prompt, model, expect string, timeout time.Duration) (time.Duration, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	params := &mcp.CallToolParams{Name: t.Tool, Arguments: t.ToolArgs(prompt, model)}
	start := time.Now()
	res, err := cs.CallTool(cctx, params)
	d := time.Since(start)
	if err != nil {
		return d, fmt.Errorf("%s: %s: %w", t.Name, t.Tool, err)
	}
	text := resultText(res)
	if res.IsError {
		return d, fmt.Errorf("%s: %s returned an error: %s", t.Name, t.Tool, clip(text, 600))
	}
	if expect != "" && !strings.Contains(text, expect) {
		return d, fmt.Errorf("%s: the answer does not echo %q, so it did not come from the CLI for this call: %s", t.Name, expect, clip(text, 600))
	}
	return d, nil
}

// resultText is the text of a tool result's text contents.
func resultText(res *mcp.CallToolResult) string {
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	return text.String()
}

// clip shortens s to n bytes (its start), or to -n bytes (its end).
func clip(s string, n int) string {
	if n >= 0 && len(s) > n {
		return s[:n] + "…"
	}
	if n < 0 && len(s) > -n {
		return "…" + s[len(s)+n:]
	}
	return s
}

// fleet is the servers of one section, closed together.
type fleet struct {
	mu      sync.Mutex
	servers []*server
}

func (f *fleet) add(s *server) *server {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.servers = append(f.servers, s)
	return s
}

func (f *fleet) closeAll() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var errs []error
	for _, s := range f.servers {
		errs = append(errs, s.close())
	}
	f.servers = nil
	return errors.Join(errs...)
}

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// The tests in this package run the fake as a real process, built once by TestMain with the same
// helper that other packages use.

var fakeGemini string

func TestMain(m *testing.M) { os.Exit(geminitest.RunWithFake(m, &fakeGemini)) }

// sandbox is one test's private world for the fake: a home for its sessions, a working directory
// and an invocation log.
type sandbox struct {
	t    *testing.T
	home string
	dir  string
	log  string
	// env holds extra environment variables; they override the sandbox's own.
	env []string
}

func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	root := t.TempDir()
	s := &sandbox{
		t:    t,
		home: filepath.Join(root, "home"),
		dir:  filepath.Join(root, "work"),
		log:  filepath.Join(root, "invocations.jsonl"),
	}
	if err := os.Mkdir(s.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return s
}

// subdir makes a directory below the sandbox's working directory and returns a copy of the
// sandbox that runs the fake there.
func (s *sandbox) subdir(name string) *sandbox {
	s.t.Helper()
	c := *s
	c.dir = filepath.Join(s.dir, name)
	if err := os.Mkdir(c.dir, 0o755); err != nil {
		s.t.Fatal(err)
	}
	return &c
}

// with returns a copy of the sandbox with more environment variables.
func (s *sandbox) with(env ...string) *sandbox {
	c := *s
	c.env = append(append([]string{}, s.env...), env...)
	return &c
}

// result is what one finished run of the fake produced.
type result struct {
	stdout string
	stderr string
	code   int
}

// run runs the fake with stdin from the null device and waits for it.
func (s *sandbox) run(args ...string) result {
	s.t.Helper()
	return s.runWith(nil, args...)
}

// runWith runs the fake with the given stdin and waits for it. A *os.File is passed to the fake
// as it is; any other reader arrives through a pipe.
func (s *sandbox) runWith(stdin io.Reader, args ...string) result {
	s.t.Helper()
	r, err := s.try(stdin, args...)
	if err != nil {
		s.t.Fatalf("running the fake: %v", err)
	}
	return r
}

// try is runWith for goroutines other than the test's: it returns an error instead of failing
// the test.
func (s *sandbox) try(stdin io.Reader, args ...string) (result, error) {
	cmd := s.command(args...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		r.code, err = exitErr.ExitCode(), nil
	}
	return r, err
}

// command returns an unstarted command that runs the fake in the sandbox. The test's context
// kills it if the test ends first.
func (s *sandbox) command(args ...string) *exec.Cmd {
	cmd := exec.CommandContext(s.t.Context(), fakeGemini, args...)
	cmd.Dir = s.dir
	cmd.Env = s.environ()
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// environ returns the fake's environment: this process's, without anything that steers the
// fake or the real CLI, plus the sandbox's settings.
func (s *sandbox) environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "FAKE_GEMINI_") || strings.HasPrefix(name, "GEMINI_") || name == "PWD" {
			continue
		}
		env = append(env, kv)
	}
	// PWD lets os.Getwd in the fake report the directory as spelled here even where the temporary
	// directory lies behind a symbolic link, as on macOS.
	env = append(env,
		"PWD="+s.dir,
		geminitest.EnvHome+"="+s.home,
		geminitest.EnvLog+"="+s.log,
		geminitest.EnvSelfTimeout+"=30s",
	)
	return append(env, s.env...)
}

// invocations returns the sandbox's invocation log.
func (s *sandbox) invocations() []geminitest.Invocation {
	s.t.Helper()
	invs, err := geminitest.ReadLog(s.log)
	if err != nil {
		s.t.Fatal(err)
	}
	return invs
}

// lastInvocation returns the newest entry of the invocation log.
func (s *sandbox) lastInvocation() geminitest.Invocation {
	s.t.Helper()
	invs := s.invocations()
	if len(invs) == 0 {
		s.t.Fatal("the fake logged no invocation")
	}
	return invs[len(invs)-1]
}

// sessionDir is where the fake keeps the sandbox's sessions.
func (s *sandbox) sessionDir() string {
	return geminitest.SessionDir(s.home, s.dir)
}

// mustSucceed fails the test unless r is a clean success.
func (r result) mustSucceed(t *testing.T) result {
	t.Helper()
	if r.code != 0 {
		t.Fatalf("exit code %d, want 0\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	return r
}

// mustFail fails the test unless r ended with exit code code and wantStderr in its stderr.
func (r result) mustFail(t *testing.T, code int, wantStderr string) result {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit code %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, wantStderr) {
		t.Fatalf("stderr does not contain %q:\n%s", wantStderr, r.stderr)
	}
	return r
}

// jsonOut decodes a run's --output-format json stdout.
func (r result) jsonOut(t *testing.T) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
	}
	return out
}

// answerLine returns the text-mode answer without its newline.
func (r result) answerLine(t *testing.T) string {
	t.Helper()
	line, ok := strings.CutSuffix(r.stdout, "\n")
	if !ok || strings.Contains(line, "\n") {
		t.Fatalf("stdout is not one line: %q", r.stdout)
	}
	return line
}

// waitForLine reads r until a line starting with prefix and returns that line. It fails the test
// when the stream ends first; the fake's self-timeout bounds the wait.
func waitForLine(t *testing.T, r *bufio.Reader, prefix string) string {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if strings.HasPrefix(line, prefix) {
			return strings.TrimSuffix(line, "\n")
		}
		if err != nil {
			t.Fatalf("stderr ended before a line starting with %q: %v", prefix, err)
		}
	}
}

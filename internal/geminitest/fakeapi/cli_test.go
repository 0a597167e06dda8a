package fakeapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runCLI runs the real CLI in dir with the Server's home and returns its
// stdout, stderr and exit code.
func runCLI(t *testing.T, gemini string, env []string, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gemini, args...)
	cmd.Env = env
	cmd.Dir = dir
	var so, se bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, &so, &se // nil stdin is /dev/null
	err := cmd.Run()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
	default:
		t.Fatalf("run %v: %v", args, err)
	}
	return so.String(), se.String(), code
}

// TestRealCLI proves the fake API against the real Gemini CLI: a first turn,
// a resumed turn that sends more history, and an API error.
func TestRealCLI(t *testing.T) {
	gemini := RealCLI(t)
	s := newServer(t)
	home, work := t.TempDir(), t.TempDir()
	env := append([]string{
		"PATH=" + os.Getenv("PATH"),
		"TMPDIR=" + t.TempDir(),
		"GEMINI_CLI_NO_RELAUNCH=true",
	}, s.Home(t, home)...)

	out, errOut, code := runCLI(t, gemini, env, work, "-m", "gemini-fake", "-o", "json", "--prompt=hello fake api")
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var first struct {
		SessionID string `json:"session_id"`
		Response  string `json:"response"`
	}
	if err := json.Unmarshal([]byte(out), &first); err != nil {
		t.Fatalf("stdout %q: %v", out, err)
	}
	want := "fake-api answer: model=gemini-fake contents=1 system=yes last=hello fake api"
	if first.Response != want || first.SessionID == "" {
		t.Errorf("got %+v, want response %q", first, want)
	}
	chats, _ := filepath.Glob(filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*-"+first.SessionID[:8]+".jsonl"))
	if len(chats) != 1 {
		t.Errorf("session files for %s under %s: %v", first.SessionID, home, chats)
	}

	out, errOut, code = runCLI(t, gemini, env, work, "-m", "gemini-fake", "-o", "json", "-r", first.SessionID, "--prompt=second turn")
	if code != 0 {
		t.Fatalf("resume: exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	if !strings.Contains(out, "contents=3 system=yes last=second turn") || !strings.Contains(out, first.SessionID) {
		t.Errorf("resume answer: %s", out)
	}

	out, errOut, code = runCLI(t, gemini, env, work, "-m", "gemini-fake", "-o", "json", "--prompt=fail [[status:400]]")
	if code != 144 || out != "" || !strings.Contains(errOut, "fake error 400") {
		t.Errorf("[[status:400]]: exit %d (want 144)\nstdout: %s\nstderr: %s", code, out, errOut)
	}

	var streams []Request
	for _, r := range s.Requests() {
		if r.Method == MethodStream {
			streams = append(streams, r)
		}
	}
	if len(streams) != 3 {
		t.Fatalf("saw %d stream requests, want 3: %+v", len(streams), streams)
	}
	for i, w := range []struct {
		n      int
		last   string
		status int
	}{{1, "hello fake api", 200}, {3, "second turn", 200}, {1, "fail [[status:400]]", 400}} {
		r := streams[i]
		if r.Model != "gemini-fake" || r.NumContents != w.n || r.LastUserText != w.last || r.Status != w.status || r.SystemInstruction == "" {
			t.Errorf("request %d: model=%q n=%d last=%q status=%d system=%d bytes; want n=%d last=%q status=%d",
				i, r.Model, r.NumContents, r.LastUserText, r.Status, len(r.SystemInstruction), w.n, w.last, w.status)
		}
	}
}

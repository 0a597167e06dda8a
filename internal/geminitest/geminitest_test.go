package geminitest

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestAnswer(t *testing.T) {
	tests := []struct {
		turn          int
		model, system string
		prompt        string
		want          string
	}{
		{
			1, "gemini-2.5-pro", "You are a fake.\r\nMore", "line one\nline two\r\n" + strings.Repeat("x", 60),
			"fake-gemini turn=1 model=gemini-2.5-pro system=You are a fake. len=79 sha256=0843a957aefb prompt=line one line two  " + strings.Repeat("x", 41),
		},
		{3, "m", "", "héllo", "fake-gemini turn=3 model=m system=none len=6 sha256=3c48591d8d09 prompt=héllo"},
		{2, "m", "\nsecond line", "héllo", "fake-gemini turn=2 model=m system=none len=6 sha256=3c48591d8d09 prompt=héllo"},
	}
	for _, tt := range tests {
		if got := Answer(tt.turn, tt.model, tt.system, tt.prompt); got != tt.want {
			t.Errorf("Answer(%d, %q, %q, %q)\n got %s\nwant %s", tt.turn, tt.model, tt.system, tt.prompt, got, tt.want)
		}
	}
}

func TestSessionTitle(t *testing.T) {
	for prompt, want := range map[string]string{
		"short":                      "short",
		"first line\r\nsecond line":  "first line",
		strings.Repeat("ü", 41):      strings.Repeat("ü", 40),
		"\nstarts with a line break": "",
	} {
		if got := SessionTitle(prompt); got != want {
			t.Errorf("SessionTitle(%q) = %q, want %q", prompt, got, want)
		}
	}
}

func TestSessionDir(t *testing.T) {
	got := SessionDir("/home/fake", "/work/dir")
	if want := filepath.Join("/home/fake", "sessions", "38ac5205c34a5716"); got != want {
		t.Errorf("SessionDir = %q, want %q", got, want)
	}
	same := SessionDir("/h", "/work/dir")
	if SessionDir("/h", "/work/dir/") == same || SessionDir("/h", "/work/Dir") == same {
		t.Error("different spellings of a directory share a session directory")
	}
}

func TestReadLog(t *testing.T) {
	dir := t.TempDir()
	invs, err := ReadLog(filepath.Join(dir, "missing.jsonl"))
	if err != nil || invs != nil {
		t.Errorf("missing log: %v, %v; want no invocations and no error", invs, err)
	}

	path := filepath.Join(dir, "log.jsonl")
	long := strings.Repeat("long prompt ", 20000) // Longer than a bufio.Scanner line.
	content := `{"pid":10,"ppid":1,"pgid":10,"argv":["-p","hi"],"cwd":"/w","stdinKind":"devnull","stdinBytes":0,"prompt":"hi","systemMdPath":"","systemMd":"","env":{"GEMINI_MODEL":""},"childPid":0}` + "\n" +
		`{"pid":11,"ppid":1,"pgid":10,"argv":[],"cwd":"/w","stdinKind":"pipe","stdinBytes":240000,"prompt":"` + long + `","systemMdPath":"/s.md","systemMd":"sys","env":{},"childPid":12}` + "\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	invs, err = ReadLog(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Invocation{
		{Pid: 10, Ppid: 1, Pgid: 10, Argv: []string{"-p", "hi"}, Cwd: "/w", StdinKind: StdinDevNull, Prompt: "hi", Env: map[string]string{"GEMINI_MODEL": ""}},
		{Pid: 11, Ppid: 1, Pgid: 10, Argv: []string{}, Cwd: "/w", StdinKind: StdinPipe, StdinBytes: 240000, Prompt: long,
			SystemMdPath: "/s.md", SystemMd: "sys", Env: map[string]string{}, ChildPid: 12},
	}
	if !reflect.DeepEqual(invs, want) {
		t.Errorf("ReadLog = %+v\nwant %+v", invs, want)
	}

	for name, bad := range map[string]string{
		"truncated":     `{"pid":10,"argv":[`,
		"unknown field": `{"pid":10,"surprise":true}`,
	} {
		if err := os.WriteFile(path, []byte(content+bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if invs, err := ReadLog(path); err == nil || len(invs) != 2 {
			t.Errorf("%s entry: ReadLog returned %d invocations and error %v; want the 2 good ones and an error", name, len(invs), err)
		}
	}
}

// TestBuildFake builds the fake, runs it, and checks that cleanup removes it.
func TestBuildFake(t *testing.T) {
	path, cleanup, err := BuildFake()
	if err != nil {
		t.Fatal(err)
	}
	if base := strings.TrimSuffix(filepath.Base(path), ".exe"); base != "gemini" {
		t.Errorf("the fake is called %s, want gemini", filepath.Base(path))
	}
	cmd := exec.Command(path, "--version")
	cmd.Env = append(os.Environ(), EnvVersion+"=9.9.9")
	out, err := cmd.Output()
	if err != nil || string(out) != "9.9.9\n" {
		t.Errorf("gemini --version printed %q, %v", out, err)
	}
	cleanup()
	if _, err := os.Stat(filepath.Dir(path)); !os.IsNotExist(err) {
		t.Errorf("cleanup left %s behind: %v", filepath.Dir(path), err)
	}
}

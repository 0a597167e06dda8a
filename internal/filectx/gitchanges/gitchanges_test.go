package gitchanges

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// repo makes a git repository with one commit of files.
func repo(t *testing.T, files map[string]string) string {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	git(t, dir, "init", "-q")
	writeFiles(t, dir, files)
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "initial")
	return dir
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCollect(t *testing.T) {
	dir := repo(t, map[string]string{"a.go": "package a\n", "old.txt": "one\ntwo\nthree\nfour\n", "gone.txt": "bye\n", ".gitignore": "*.log\n"})
	// Staged: a modification, a rename, a new binary file.
	writeFiles(t, dir, map[string]string{"a.go": "package a\n\nconst Staged = 1\n", "logo.png": "\x89PNG\x00\x01\x02"})
	git(t, dir, "mv", "old.txt", "new.txt")
	git(t, dir, "add", "a.go", "logo.png")
	// Unstaged: a further change to a.go, a deletion; untracked: a new
	// text file in a new directory, a binary, and an ignored log.
	writeFiles(t, dir, map[string]string{"a.go": "package a\n\nconst Staged = 1\nconst Unstaged = 2\n", "pkg/new.go": "package pkg\n\nvar x = 1", "blob.bin": "a\x00b", "debug.log": "ignored\n"})
	if err := os.Remove(filepath.Join(dir, "gone.txt")); err != nil {
		t.Fatal(err)
	}

	c, err := Collect(t.Context(), filepath.Join(dir, "pkg"), Options{Staged: true, Unstaged: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.Root != dir {
		t.Fatalf("root %s, want %s", c.Root, dir)
	}
	want := []File{
		{Path: "a.go", Status: "modified", Staged: true},
		{Path: "logo.png", Status: "added", Staged: true, Binary: true},
		{Path: "new.txt", From: "old.txt", Status: "renamed", Staged: true},
		{Path: "a.go", Status: "modified"},
		{Path: "gone.txt", Status: "deleted"},
		{Path: "blob.bin", Status: "untracked", Binary: true},
		{Path: "pkg/new.go", Status: "untracked"},
	}
	if !slices.Equal(c.Files, want) {
		t.Fatalf("files\n%+v\nwant\n%+v", c.Files, want)
	}
	for _, s := range []string{"+const Staged = 1", "Binary files /dev/null and b/logo.png differ", "rename from old.txt"} {
		if !strings.Contains(c.Staged, s) {
			t.Errorf("staged diff lacks %q:\n%s", s, c.Staged)
		}
	}
	for _, s := range []string{"+const Unstaged = 2", "deleted file mode", "-bye", "+++ b/pkg/new.go\n@@ -0,0 +1,3 @@\n+package pkg\n+\n+var x = 1\n\\ No newline at end of file\n", "Binary files /dev/null and b/blob.bin differ"} {
		if !strings.Contains(c.Unstaged, s) {
			t.Errorf("unstaged diff lacks %q:\n%s", s, c.Unstaged)
		}
	}
	if strings.Contains(c.Staged, "\x00") || strings.Contains(c.Unstaged, "\x00") || strings.Contains(c.Unstaged, "debug.log") {
		t.Fatal("a binary was dumped or an ignored file shown")
	}
	if strings.Contains(c.Staged, "Unstaged") || c.Truncated {
		t.Fatal("the unstaged change leaked into the staged diff")
	}
	d := c.Diff()
	if !strings.HasPrefix(d, "## Staged changes\n") || !strings.Contains(d, "\n## Unstaged changes\n") {
		t.Fatalf("diff %q", d[:80])
	}

	only, err := Collect(t.Context(), dir, Options{Staged: true})
	if err != nil || only.Unstaged != "" || len(only.Files) != 3 {
		t.Fatalf("staged only: %+v %v", only, err)
	}
	cut, err := Collect(t.Context(), dir, Options{Unstaged: true, MaxBytes: 100})
	if err != nil || !cut.Truncated || len(cut.Unstaged) > 100 || !strings.Contains(cut.Diff(), "the diff was cut") {
		t.Fatalf("cut: %v %d %v", cut.Truncated, len(cut.Unstaged), err)
	}
}

func TestCollectInAFreshRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	writeFiles(t, dir, map[string]string{"first.go": "package first\n"})
	git(t, dir, "add", "first.go")
	c, err := Collect(t.Context(), dir, Options{Staged: true, Unstaged: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Files) != 1 || !strings.Contains(c.Staged, "+package first") {
		t.Fatalf("%+v", c)
	}
	clean := repo(t, map[string]string{"x": "x\n"})
	c, err = Collect(t.Context(), clean, Options{Staged: true, Unstaged: true})
	if err != nil || !c.Empty() || c.Diff() != "" {
		t.Fatalf("clean: %+v %v", c, err)
	}
}

func TestCollectErrors(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	plain := t.TempDir()
	// GIT_CEILING_DIRECTORIES keeps git from finding a repository above
	// the temporary directory.
	t.Setenv("GIT_CEILING_DIRECTORIES", filepath.Dir(plain))
	kind := func(err error) Kind {
		var e *Error
		if !errors.As(err, &e) {
			t.Fatalf("%v (%T) is not an *Error", err, err)
		}
		return e.Kind
	}
	_, err := Collect(t.Context(), plain, Options{Staged: true})
	if kind(err) != KindNotRepo || !IsNotRepo(err) || !strings.Contains(err.Error(), "not inside a git repository") {
		t.Fatal(err)
	}
	_, err = Collect(t.Context(), filepath.Join(plain, "missing"), Options{Staged: true})
	if kind(err) != KindNotRepo {
		t.Fatal(err)
	}
	_, err = Collect(t.Context(), plain, Options{Staged: true, Git: filepath.Join(plain, "no-git-here")})
	if kind(err) != KindGitMissing || !strings.Contains(err.Error(), "install git") {
		t.Fatal(err)
	}
	if _, err := Collect(t.Context(), plain, Options{}); err == nil {
		t.Fatal("nothing asked for was accepted")
	}
	if runtime.GOOS == "windows" {
		return
	}
	// A git that never answers: only the timeout ends it.
	slow := filepath.Join(plain, "slow-git")
	if err := os.WriteFile(slow, []byte("#!/bin/sh\nexec sleep 60\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = Collect(t.Context(), repo(t, map[string]string{"x": "x\n"}), Options{Staged: true, Git: slow, Timeout: 200 * time.Millisecond})
	if kind(err) != KindTimeout || !strings.Contains(err.Error(), "did not finish within 200ms") {
		t.Fatal(err)
	}
}

// TestCollectCutsALargeStagedFile stages a file whose diff is larger
// than what git's output is read of: the diff is cut at MaxBytes, not
// failed.
func TestCollectCutsALargeStagedFile(t *testing.T) {
	dir := repo(t, map[string]string{"small.txt": "x\n"})
	line := strings.Repeat("0123456789abcdef", 4) + "\n"
	writeFiles(t, dir, map[string]string{"big.txt": strings.Repeat(line, (8<<20)/len(line))})
	git(t, dir, "add", "big.txt")
	c, err := Collect(t.Context(), dir, Options{Staged: true, Unstaged: true})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Truncated || len(c.Staged) > DefaultMaxBytes || len(c.Staged) < DefaultMaxBytes/2 || !strings.Contains(c.Diff(), "the diff was cut") {
		t.Fatalf("truncated %v, %d bytes", c.Truncated, len(c.Staged))
	}
	if len(c.Files) != 1 || c.Files[0].Path != "big.txt" {
		t.Fatalf("files %+v", c.Files)
	}
}

// TestCollectListsAtMostMaxFiles makes more untracked files than the
// list holds: the list stops at DefaultMaxFiles and says how many more
// there are.
func TestCollectListsAtMostMaxFiles(t *testing.T) {
	dir := repo(t, map[string]string{"x.txt": "x\n"})
	const n = 3000
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("new/f%04d.txt", i)] = fmt.Sprintf("file %d\n", i)
	}
	writeFiles(t, dir, files)
	writeFiles(t, dir, map[string]string{"x.txt": "changed\n"})
	c, err := Collect(t.Context(), dir, Options{Staged: true, Unstaged: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Files) != DefaultMaxFiles || c.Omitted != n+1-DefaultMaxFiles {
		t.Fatalf("%d files listed, %d omitted", len(c.Files), c.Omitted)
	}
	if c.Files[0].Path != "x.txt" || !strings.Contains(c.Diff(), fmt.Sprintf("%d more changed files are not shown", c.Omitted)) {
		t.Fatalf("first %+v; diff ends %q", c.Files[0], c.Diff()[len(c.Diff())-200:])
	}
}

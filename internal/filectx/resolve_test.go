package filectx

import (
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestResolveRefusesWhatIsOutsideTheSandbox(t *testing.T) {
	outside := tree(t, map[string]string{"secret.txt": "top secret\n", "dir/x.go": "package x\n"})
	root := tree(t, map[string]string{"ok.go": "package ok\n", "sub/a.go": "package sub\n", "state/sessions.db": "x"})
	mustSymlink(t, filepath.Join(outside, "secret.txt"), filepath.Join(root, "escape.txt"))
	mustSymlink(t, filepath.Join(outside, "dir"), filepath.Join(root, "escapedir"))
	mustSymlink(t, filepath.Join(root, "state"), filepath.Join(root, "statelink"))
	s, err := NewSandbox(root, []string{filepath.Join(root, "state")})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		entry string
		want  string // in the message
	}{
		{"../x", "outside the project root"},
		{"sub/../../x", "outside the project root"},
		{"/etc/passwd", "outside the project root"},
		{filepath.Join(outside, "secret.txt"), "outside the project root"},
		{"escape.txt", "symbolic link"},
		{"escapedir/x.go", "symbolic link"},
		{"escapedir", "symbolic link"},
		{"state", "state directory"},
		{"state/sessions.db", "state directory"},
		{"statelink/sessions.db", "state directory"},
	}
	for _, c := range cases {
		t.Run(c.entry, func(t *testing.T) {
			_, err := s.Resolve(c.entry)
			fe := asError(t, err, CategorySecurity)
			if fe.Entry != c.entry || fe.Field != "files" || !strings.Contains(err.Error(), c.want) || fe.Category.Code() != -32001 {
				t.Fatalf("entry %q field %q code %d: %v", fe.Entry, fe.Field, fe.Category.Code(), err)
			}
		})
	}
}

func TestResolveRefusesSpecialFiles(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs or Unix sockets here")
	}
	root := tree(t, nil)
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(root, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	s, err := NewSandbox(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	for entry, want := range map[string]string{"fifo": "named pipe", "sock": "socket"} {
		_, err := s.Resolve(entry)
		fe := asError(t, err, CategorySecurity)
		if !strings.Contains(fe.Message, want) {
			t.Fatalf("%s: %v", entry, err)
		}
	}
	// In a directory they are skipped, and opening a FIFO would hang.
	sc, err := s.ScanEntries(t.Context(), []string{"."}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Candidates) != 0 || len(sc.Skipped) != 2 || sc.Skipped[0].Reason != SkipSpecial || sc.Skipped[1].Reason != SkipSpecial {
		t.Fatalf("candidates %v skipped %v", sc.Candidates, sc.Skipped)
	}
}

func TestResolveAccepts(t *testing.T) {
	root := tree(t, map[string]string{"a/b.go": "package a\n"})
	mustSymlink(t, filepath.Join(root, "a", "b.go"), filepath.Join(root, "link.go"))
	s, err := NewSandbox(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	for entry, want := range map[string]string{
		"a/b.go":                      "a/b.go",
		"./a/../a/b.go":               "a/b.go",
		filepath.Join(root, "a/b.go"): "a/b.go",
		"link.go":                     "a/b.go",
		"a":                           "a",
		".":                           ".",
		root:                          ".",
	} {
		r, err := s.Resolve(entry)
		if err != nil {
			t.Fatalf("%s: %v", entry, err)
		}
		if r.Rel != want || r.Entry != entry {
			t.Fatalf("%s: rel %q", entry, r.Rel)
		}
	}
	_, err = s.Resolve("missing.go")
	fe := asError(t, err, CategoryValidation)
	if fe.Category.Code() != -32602 || !strings.Contains(fe.Message, "does not exist") {
		t.Fatal(err)
	}
	_, err = s.Resolve("")
	asError(t, err, CategoryValidation)
}

func mustSymlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symbolic links unavailable: %v", err)
	}
}

// FuzzResolve checks the sandbox's one promise: whatever the entry, a
// path that Resolve accepts is inside the root.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"a", "../a", "a/../../b", "/etc/passwd", "link/../x", "./", "..", "a/./b", "link/x", "//a", "a\x00b"} {
		f.Add(s)
	}
	outside := tree(f, map[string]string{"x": "x"})
	root := tree(f, map[string]string{"a": "a", "d/b": "b"})
	mustSymlink(f, outside, filepath.Join(root, "link"))
	s, err := NewSandbox(root, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, entry string) {
		r, err := s.Resolve(entry)
		if err != nil {
			return
		}
		if !within(root, r.Path) {
			t.Fatalf("%q resolved to %s, outside %s", entry, r.Path, root)
		}
		if real, err := filepath.EvalSymlinks(r.Path); err != nil || real != r.Path {
			t.Fatalf("%q resolved to %s, which is not its real path (%s, %v)", entry, r.Path, real, err)
		}
	})
}

// TestSpecialGitignoreDoesNotBlock: a named pipe called .gitignore would
// block a scan that opened it, waiting for a writer that never comes.
func TestSpecialGitignoreDoesNotBlock(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no FIFOs here")
	}
	root := tree(t, map[string]string{"sub/a.go": "package a\n"})
	for _, p := range []string{".gitignore", "sub/.gitignore"} {
		if err := syscall.Mkfifo(filepath.Join(root, p), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() {
		_, err := Gather(t.Context(), root, nil, []string{"sub"}, nil, Options{})
		if err == nil {
			_, err = Gather(t.Context(), root, nil, []string{"."}, nil, Options{})
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		// Unblock the reader so that the goroutine can end.
		for _, p := range []string{".gitignore", "sub/.gitignore"} {
			if f, err := os.OpenFile(filepath.Join(root, p), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				f.Close()
			}
		}
		t.Fatal("the scan blocked on a FIFO named .gitignore")
	}
}

//go:build unix

package filectx

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestResolveRefusesSpecialFiles(t *testing.T) {
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

// TestSpecialGitignoreDoesNotBlock: a named pipe called .gitignore would
// block a scan that opened it, waiting for a writer that never comes.
func TestSpecialGitignoreDoesNotBlock(t *testing.T) {
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

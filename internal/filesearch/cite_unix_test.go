//go:build unix

package filesearch

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// A FIFO swapped in at a cited path after Cite resolved it: reading its
// lines returns at once, with none, rather than blocking the answer on a
// pipe no one writes.
func TestCiteLinesOfAFIFOReturnAtOnce(t *testing.T) {
	root := t.TempDir()
	fifo := filepath.Join(root, "a.go")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	done := make(chan [2]int, 1)
	go func() {
		s, e := lines(fifo, "func A() {}", DefaultMaxFileBytes)
		done <- [2]int{s, e}
	}()
	select {
	case got := <-done:
		if got != [2]int{} {
			t.Fatalf("lines of a FIFO: %v, want none", got)
		}
	case <-time.After(10 * time.Second): // a guard: it returns at once or never
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close() // let the blocked open return
		}
		<-done
		t.Fatal("reading a cited FIFO blocked")
	}
}

// A hostile API citing files the index never sent: a secret file (.env,
// which the index leaves out), and a file of the root that is not in the
// caller's manifest. Neither is read: no line numbers, no link, so that
// citations are no oracle of what a file holds.
func TestCiteOnlyFilesTheIndexHolds(t *testing.T) {
	root := t.TempDir()
	write(t, root, ".env", "API_KEY=sk-secret-value-1234\n")
	write(t, root, "private.go", "package p\n\nvar token = \"tok\"\n")
	write(t, root, "a.go", "package a\n\nfunc A() {}\n")
	held := map[string]bool{"a.go": true}
	cs := Cite(root, nil, held, []backend.FileSource{
		{Path: ".env", Text: "API_KEY=sk-secret-value-1234"},
		{Path: "private.go", Text: "var token = \"tok\""},
		{Path: "a.go", Text: "func A() {}"},
	}, 0)
	text, links := Render(cs)
	if text != "Files:\n[1] .env\n[2] private.go\n[3] a.go:3" || len(links) != 1 {
		t.Fatalf("citations %q, %d links; want lines and a link only for a.go", text, len(links))
	}
}

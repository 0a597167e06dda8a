package docs

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxSourceLines is how long a non-test Go file under internal/ may be: a
// file longer than this holds more than one concern a reader can name.
const maxSourceLines = 500

// oversizedAllowed lists the files that are still over maxSourceLines while
// they are being split along their concerns. Each entry is a debt: remove it
// when its file is split, and add none.
var oversizedAllowed = map[string]bool{
	// Test fakes, imported only by tests.
	"internal/geminitest/fakeapi/fakeapi.go":  true,
	"internal/session/storetest/storetest.go": true,
}

// TestSourceFileSize fails when a non-test Go file under internal/ is over
// maxSourceLines lines and is not on the allow-list, and when an allow-listed
// file no longer needs its entry.
func TestSourceFileSize(t *testing.T) {
	dir := filepath.Join(root, "internal")
	checked := 0
	seen := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); p != dir && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		checked++
		n := bytes.Count(b, []byte("\n"))
		if len(b) > 0 && b[len(b)-1] != '\n' {
			n++
		}
		switch {
		case n > maxSourceLines && !oversizedAllowed[rel]:
			t.Errorf("%s has %d lines, over %d: split it along its concerns", rel, n, maxSourceLines)
		case n <= maxSourceLines && oversizedAllowed[rel]:
			t.Errorf("%s has %d lines, within %d: remove it from oversizedAllowed", rel, n, maxSourceLines)
		}
		seen[rel] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d Go files under %s", checked, dir)
	}
	for rel := range oversizedAllowed {
		if !seen[rel] {
			t.Errorf("oversizedAllowed names %s, which does not exist", rel)
		}
	}
}

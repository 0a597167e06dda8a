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

// TestSourceFileSize fails when a non-test Go file under internal/ is over
// maxSourceLines lines.
func TestSourceFileSize(t *testing.T) {
	dir := filepath.Join(root, "internal")
	checked := 0
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
		if n > maxSourceLines {
			t.Errorf("%s has %d lines, over %d: split it along its concerns", rel, n, maxSourceLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d Go files under %s", checked, dir)
	}
}

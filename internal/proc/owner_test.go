package proc

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// execOwners are the directories, relative to the repository's root (the
// workshop's module under workshop/ included), whose non-test files may
// import os/exec: this package, the test helpers and the benchmark, which
// start the programs they test.
var execOwners = []string{"internal/proc", "internal/geminitest", "workshop/bench"}

// TestOnlyProcImportsExec: no non-test Go file of the module outside
// execOwners imports os/exec, whatever its build constraints, so that
// every process the server starts gets a process group, signals on
// cancel and caps on its output from this package. golangci-lint's
// depguard (.golangci.yml) says the same to an editor.
func TestOnlyProcImportsExec(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("the module's root is not two levels up: %v", err)
	}
	var offenders []string
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules" || name == "vendor") {
				return filepath.SkipDir
			}
			if slices.Contains(execOwners, rel) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		files++
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "os/exec" {
				offenders = append(offenders, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("only %d Go files found under %s: the walk missed the module", files, root)
	}
	if len(offenders) > 0 {
		t.Errorf("os/exec is imported outside internal/proc by %s: start processes through proc.Run or proc.Start, find programs with proc.LookPath",
			strings.Join(offenders, ", "))
	}
}

package config

import (
	"go/build"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestImportsNothingOfTheModule: config is a leaf, so that every package
// may read its types and defaults; it imports no package of this module.
func TestImportsNothingOfTheModule(t *testing.T) {
	mod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(mod), "\n")
	module := strings.TrimSpace(strings.TrimPrefix(first, "module"))
	if module == "" {
		t.Fatalf("no module line in go.mod: %q", first)
	}
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkg.GoFiles) == 0 {
		t.Fatal("no Go files found")
	}
	for _, imp := range pkg.Imports {
		if imp == module || strings.HasPrefix(imp, module+"/") {
			t.Errorf("config imports %s: it must import no package of %s", imp, module)
		}
	}
}

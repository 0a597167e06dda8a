package filectx

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// tree writes files (slash paths → content) under a new temporary
// directory and returns its resolved path.
func tree(t testing.TB, files map[string]string) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	write(t, root, files)
	return root
}

func write(t testing.TB, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func asError(t *testing.T, err error, cat Category) *Error {
	t.Helper()
	var fe *Error
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a *filectx.Error", err, err)
	}
	if fe.Category != cat {
		t.Fatalf("category %q, want %q: %v", fe.Category, cat, err)
	}
	return fe
}

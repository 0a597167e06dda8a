package filectx

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/pathx"
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
		if !pathx.Within(root, r.Path) {
			t.Fatalf("%q resolved to %s, outside %s", entry, r.Path, root)
		}
		if real, err := filepath.EvalSymlinks(r.Path); err != nil || real != r.Path {
			t.Fatalf("%q resolved to %s, which is not its real path (%s, %v)", entry, r.Path, real, err)
		}
	})
}

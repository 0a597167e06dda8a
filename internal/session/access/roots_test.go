package access

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/pathx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// TestResolveCwdAllowedRoots checks that a cwd is compared with the allowed
// roots only after ~, relative paths and symlinks are resolved, so that no
// spelling of a directory outside them gets in.
func TestResolveCwdAllowedRoots(t *testing.T) {
	t.Parallel()
	base := realTemp(t)
	root := filepath.Join(base, "root")
	sub := filepath.Join(root, "sub")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{sub, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A symlink inside the root that leads out of it, and one outside
	// that leads in.
	mustSymlink(t, outside, filepath.Join(root, "escape"))
	mustSymlink(t, sub, filepath.Join(base, "into"))
	// A sibling whose name starts with the root's.
	if err := os.Mkdir(root+"-sibling", 0o755); err != nil {
		t.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	roots, err := ResolveRoots([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	d := &Rules{DefaultCwd: root, AllowedRoots: roots}
	cases := []struct {
		cwd  string
		want string // the directory, or "" when refused
	}{
		{"", root},
		{root, root},
		{"sub", sub},
		{sub + "/../sub", sub},
		{filepath.Join(base, "into"), sub},
		{"/", ""},
		{"/etc", ""},
		{"~", ""},
		{"../../..", ""},
		{"..", ""},
		{"sub/../..", ""},
		{"escape", ""},
		{filepath.Join(root, "escape"), ""},
		{outside, ""},
		{root + "-sibling", ""},
	}
	if runtime.GOOS == "linux" {
		// The server's own directory, which is not under root.
		cases = append(cases, struct{ cwd, want string }{"/proc/self/cwd", ""})
	}
	if home != "" && pathx.Within(root, realOr(home)) {
		t.Fatalf("the test's root %s is under the home directory %s", root, home)
	}
	for _, c := range cases {
		got, err := d.ResolveDir(c.cwd)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("cwd %q was accepted as %s", c.cwd, got)
		case c.want == "" && !strings.Contains(err.Error(), "--allowed-roots") || c.want == "" && !strings.Contains(err.Error(), root):
			t.Errorf("cwd %q: the error does not name the roots and the flag: %v", c.cwd, err)
		case c.want != "" && (err != nil || got != c.want):
			t.Errorf("cwd %q: %q, %v; want %q", c.cwd, got, err, c.want)
		}
	}

	// No roots (stdio by default): any existing directory.
	open := &Rules{DefaultCwd: root}
	if got, err := open.ResolveDir("/"); err != nil || got != "/" {
		t.Errorf("without roots, / gave %q, %v", got, err)
	}

	// A recorded session whose directory is outside the roots, or has
	// become a symlink leading out, is refused too.
	for _, cwd := range []string{outside, filepath.Join(root, "escape")} {
		if err := d.checkRecordedDir(session.Record{ID: "x", Cwd: cwd}); err == nil {
			t.Errorf("recorded session in %s was accepted", cwd)
		}
	}
	if err := d.checkRecordedDir(session.Record{ID: "x", Cwd: sub}); err != nil {
		t.Errorf("recorded session in %s: %v", sub, err)
	}
}

func TestResolveRoots(t *testing.T) {
	t.Parallel()
	base := realTemp(t)
	link := filepath.Join(t.TempDir(), "link")
	mustSymlink(t, base, link)
	// A root given through a symlink is its target: candidates are
	// compared after resolving theirs.
	if got, err := ResolveRoots([]string{link}); err != nil || len(got) != 1 || got[0] != base {
		t.Fatalf("symlinked root: %v %v", got, err)
	}
	if _, err := ResolveRoots([]string{filepath.Join(base, "missing")}); err == nil || !strings.Contains(err.Error(), "--allowed-roots") {
		t.Fatalf("a missing root: %v", err)
	}
	got, err := ResolveRoots([]string{"/"})
	if err != nil || len(got) != 1 || !pathx.Within(got[0], "/etc") {
		t.Fatalf("/ as a root: %v %v", got, err)
	}
}

func realTemp(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func realOr(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("symlinks: %v", err)
	}
}

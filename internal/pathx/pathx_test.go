package pathx

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// withinCases hold the tricky cases, written with forward slashes and
// turned into the system's form (with a volume on Windows).
var withinCases = []struct {
	root, p string
	want    bool
}{
	{"/srv/a", "/srv/a", true},
	{"/srv/a", "/srv/a/", true},
	{"/srv/a/", "/srv/a", true},
	{"/srv/a//", "/srv/a//b//", true},
	{"/srv/a", "/srv/a/b/c", true},
	{"/srv/a", "/srv/ab", false},
	{"/srv/ab", "/srv/a", false},
	{"/srv/a", "/srv", false},
	{"/srv/a", "/", false},
	{"/srv/a", "/srv/b", false},
	{"/srv/a", "/srv/a/../b", false},
	{"/srv/a", "/srv/b/../a/c", true},
	{"/srv/a", "/srv/a/./c", true},
	{"/srv/a/.", "/srv/a/c", true},
	{"/srv/a/b/..", "/srv/a/c", true},
	{"/srv/a", "/srv/a/..", false},
	{"/srv/a", "/srv/a/../..", false},
	{"/srv/a", "/srv/a/..foo", true},
	{"/srv", "/srv/..foo", true},
	{"/srv", "/srv/...", true},
	{"/srv/a", "/srv/a..", false},
	{"/srv/a", "/srv/..a", false},
	{"/", "/", true},
	{"/", "/srv", true},
	{"/", "/..", true}, // "/.." is "/"
	{"/", "/../srv", true},
	{"/..", "/srv", true},
	{"/srv/a", "/../srv/a/b", true},
	// Relative paths are never within, nor contain anything.
	{"srv/a", "srv/a/b", false},
	{"/srv/a", "srv/a/b", false},
	{"srv/a", "/srv/a/b", false},
	{"", "/srv", false},
	{"/srv", "", false},
	{".", ".", false},
}

// sys turns a test path into the system's form: an absolute one gets a
// volume on Windows.
func sys(p string) string {
	p = filepath.FromSlash(p)
	if runtime.GOOS == "windows" && strings.HasPrefix(p, `\`) {
		p = `C:` + p
	}
	return p
}

func TestWithin(t *testing.T) {
	for _, c := range withinCases {
		root, p := sys(c.root), sys(c.p)
		if got := Within(root, p); got != c.want {
			t.Errorf("Within(%q, %q) = %v, want %v", root, p, got, c.want)
		}
		if got := componentsWithin(root, p); got != c.want {
			t.Errorf("oracle(%q, %q) = %v, want %v (the oracle is wrong)", root, p, got, c.want)
		}
	}
}

// TestWithinCase pins what each system does with case: bytes everywhere
// but Windows, where case and the volume's case do not matter.
func TestWithinCase(t *testing.T) {
	windows := runtime.GOOS == "windows"
	if got := Within(sys("/srv/a"), sys("/SRV/A/b")); got != windows {
		t.Errorf("Within(/srv/a, /SRV/A/b) = %v, want %v on %s", got, windows, runtime.GOOS)
	}
	if windows {
		if !Within(`c:\srv`, `C:\srv\x`) {
			t.Error(`Within(c:\srv, C:\srv\x) = false: volume names differ only in case`)
		}
		for _, p := range []string{`D:\srv\x`, `\\host\share\srv\x`, `\srv\x`} {
			if Within(`C:\srv`, p) {
				t.Errorf(`Within(C:\srv, %q) = true: another volume, or none`, p)
			}
		}
		if !Within(`\\host\share`, `\\HOST\Share\x`) {
			t.Error(`Within(\\host\share, \\HOST\Share\x) = false`)
		}
	}
}

// componentsWithin is an oracle written independently of Within: it
// compares the volume and then path components one by one.
func componentsWithin(root, p string) bool {
	if !filepath.IsAbs(root) || !filepath.IsAbs(p) {
		return false
	}
	root, p = filepath.Clean(root), filepath.Clean(p)
	same := func(a, b string) bool { return a == b }
	if runtime.GOOS == "windows" {
		same = strings.EqualFold
	}
	rv, pv := filepath.VolumeName(root), filepath.VolumeName(p)
	if !same(rv, pv) {
		return false
	}
	split := func(s string) []string {
		return strings.FieldsFunc(s, func(r rune) bool { return r < 0x80 && os.IsPathSeparator(uint8(r)) })
	}
	rc, pc := split(root[len(rv):]), split(p[len(pv):])
	if len(pc) < len(rc) {
		return false
	}
	for i := range rc {
		if !same(rc[i], pc[i]) {
			return false
		}
	}
	return true
}

func FuzzWithin(f *testing.F) {
	for _, c := range withinCases {
		f.Add(sys(c.root), sys(c.p))
	}
	f.Fuzz(func(t *testing.T, root, p string) {
		got := Within(root, p)
		if want := componentsWithin(root, p); got != want {
			t.Fatalf("Within(%q, %q) = %v, the component comparison says %v", root, p, got, want)
		}
		if filepath.IsAbs(root) {
			if !Within(root, root) {
				t.Fatalf("Within(%q, itself) = false", root)
			}
			// Whatever p adds below root is within it, unless it climbs out.
			joined := filepath.Join(root, p)
			rel, err := filepath.Rel(filepath.Clean(root), joined)
			climbs := err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
			if !climbs && !Within(root, joined) {
				t.Fatalf("Within(%q, %q) = false, though it is joined below it", root, joined)
			}
		}
	})
}

// TestOneCheck keeps the sandbox's containment check in one place: no
// other file of the server may test a path for a leading ".." element
// itself (the copies drifted once already).
func TestOneCheck(t *testing.T) {
	copyRE := regexp.MustCompile(`"\.\."\s*\+\s*string\((filepath|os)\.(Path)?Separator\)|HasPrefix\([^,]+,\s*"\.\./"\)|HasPrefix\([^,]+,\s*` + "`" + `\.\.\\` + "`" + `\)`)
	err := filepath.WalkDir(filepath.Join("..", ".."), func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "testdata" || d.Name() == ".git" || d.Name() == "node_modules" || path == "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.Base(filepath.Dir(path)) == "pathx" {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if loc := copyRE.FindIndex(src); loc != nil {
			line := 1 + strings.Count(string(src[:loc[0]]), "\n")
			t.Errorf("%s:%d checks containment itself (%s): use pathx.Within", path, line, src[loc[0]:loc[1]])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

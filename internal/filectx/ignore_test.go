package filectx

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestIgnorePatterns(t *testing.T) {
	cases := []struct {
		patterns string
		path     string
		dir      bool
		want     bool
	}{
		{"*.log", "app.log", false, true},
		{"*.log", "a/b/app.log", false, true},
		{"*.log", "app.log.txt", false, false},
		{"*.log\n!keep.log", "keep.log", false, false},
		{"*.log\n!keep.log", "other.log", false, true},
		{"!keep.log\n*.log", "keep.log", false, true}, // the last match decides
		{"build/", "build", true, true},
		{"build/", "build", false, false}, // directory-only
		{"build/", "src/build", true, true},
		{"/build", "build", true, true},
		{"/build", "src/build", true, false}, // anchored
		{"doc/frotz", "doc/frotz", false, true},
		{"doc/frotz", "a/doc/frotz", false, false}, // a middle slash anchors
		{"**/foo", "foo", false, true},
		{"**/foo", "a/b/foo", false, true},
		{"**/foo/bar", "x/foo/bar", false, true},
		{"abc/**", "abc/x", false, true},
		{"abc/**", "abc/x/y", false, true},
		{"abc/**", "abc", true, false},
		{"a/**/b", "a/b", false, true},
		{"a/**/b", "a/x/y/b", false, true},
		{"a/**/b", "a/x/c", false, false},
		{"fo?.go", "foo.go", false, true},
		{"fo?.go", "fo/.go", false, false},
		{"[abc].txt", "b.txt", false, true},
		{"[!abc].txt", "b.txt", false, false},
		{"[!abc].txt", "d.txt", false, true},
		{"# comment\n\n", "# comment", false, false},
		{`\#hash`, "#hash", false, true},
		{`\!bang`, "!bang", false, true},
		{"trail   ", "trail", false, true},
		{`space\ `, "space ", false, true},
		{"[unclosed", "[unclosed", false, false},
		{"*", "anything", false, true},
		{"/", "x", false, false},
	}
	for _, c := range cases {
		ig := ParseIgnore([]byte(c.patterns))
		got, _ := ig.Match(c.path, c.dir)
		if got != c.want {
			t.Errorf("patterns %q, path %q (dir %v): ignored %v, want %v", c.patterns, c.path, c.dir, got, c.want)
		}
	}
}

// TestScanAgreesWithGit builds a tree with nested .gitignore files and
// checks that a scan keeps exactly the files git reports as untracked and
// not ignored.
func TestScanAgreesWithGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	root := tree(t, map[string]string{
		".gitignore":             "*.log\n!important.log\n/top.txt\ncache/\ndocs/**/draft.md\n**/gen/*.go\n",
		"top.txt":                "ignored at the top",
		"sub/top.txt":            "kept: /top.txt is anchored",
		"app.log":                "ignored",
		"important.log":          "re-included",
		"main.go":                "package main\n",
		"cache/x.go":             "ignored directory",
		"src/cache/y.go":         "ignored directory, any depth",
		"docs/a/b/draft.md":      "ignored",
		"docs/a/final.md":        "kept",
		"pkg/gen/z.go":           "ignored",
		"pkg/gen/z.txt":          "kept",
		"pkg/.gitignore":         "!*.log\nlocal.txt\n",
		"pkg/debug.log":          "re-included by the deeper file",
		"pkg/local.txt":          "ignored by the deeper file",
		"pkg/deeper/local.txt":   "ignored too: no slash, any depth",
		"pkg/deeper/.gitignore":  "!local.txt\n",
		"pkg/deeper/again/local": "kept",
		"odd name [x].md":        "kept",
	})
	run := func(args ...string) string {
		cmd := exec.Command(git, args...)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return string(out)
	}
	run("init", "-q")
	var want []string
	for _, p := range strings.Split(strings.TrimRight(run("ls-files", "--others", "--exclude-standard", "-z"), "\x00"), "\x00") {
		want = append(want, filepath.ToSlash(p))
	}
	s, err := NewSandbox(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := s.ScanEntries(t.Context(), []string{"."}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range sc.Candidates {
		got = append(got, c.Rel)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("scan kept\n%q\ngit keeps\n%q", got, want)
	}
}

// FuzzIgnore checks that no pattern or path makes the matcher panic, and
// that a pattern without special characters matches itself.
func FuzzIgnore(f *testing.F) {
	for _, s := range []string{"*.go", "a/**/b", "!x", "[", `\`, "**", "/a/", "a//b", "[!a-z]?"} {
		f.Add(s, "a/b/c.go", false)
	}
	f.Fuzz(func(t *testing.T, pattern, path string, dir bool) {
		ig := ParseIgnore([]byte(pattern))
		ig.Match(path, dir)
		lit := strings.Trim(pattern, "/ ")
		if lit == "" || strings.ContainsAny(pattern, "*?[]\\!#\n\r ") || strings.Contains(lit, "//") || strings.HasSuffix(pattern, "/") {
			return
		}
		// A walk never asks about "." or ".." segments.
		for _, seg := range strings.Split(lit, "/") {
			if seg == "." || seg == ".." {
				return
			}
		}
		if got, _ := ParseIgnore([]byte(lit)).Match(lit, false); !got {
			t.Fatalf("the literal pattern %q does not match itself", lit)
		}
	})
}

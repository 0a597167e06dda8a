package filectx

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func sentPaths(r *Result) []string {
	var out []string
	for _, s := range r.Sent {
		out = append(out, s.Path)
	}
	return out
}

func skippedMap(r *Result) map[string]Reason {
	m := map[string]Reason{}
	for _, s := range r.Skipped {
		m[s.Path] = s.Reason
	}
	return m
}

func TestGatherPrioritisesSkipsAndRenders(t *testing.T) {
	root := tree(t, map[string]string{
		".gitignore":          "*.tmp\nsecrets/\n",
		"README.md":           "# Title\n",
		"app.log":             "log line\n",
		"main.go":             "package main\n\nfunc main() {}\n",
		"lib/util.py":         "def f():\n    return 1\n",
		"config.yaml":         "a: 1\n",
		"notes.tmp":           "ignored\n",
		"secrets/key.txt":     "ignored\n",
		"node_modules/x.js":   "vendored\n",
		".git/config":         "never\n",
		"logo.png":            "\x89PNG",
		"data.raw":            "abc\x00def",
		"lib/vendor/dep.go":   "package dep\n",
		"state/sessions.json": "{}",
	})
	res, err := Gather(t.Context(), root, []string{filepath.Join(root, "state")}, []string{"."}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantSent := []string{"lib/util.py", "main.go", ".gitignore", "README.md", "config.yaml", "app.log"}
	if got := sentPaths(res); !slices.Equal(got, wantSent) {
		t.Fatalf("sent %q, want %q", got, wantSent)
	}
	wantSkipped := map[string]Reason{
		"notes.tmp": SkipIgnored, "secrets": SkipIgnored, "node_modules": SkipExcluded,
		"logo.png": SkipBinary, "data.raw": SkipBinary, "lib/vendor": SkipExcluded, "state": SkipForbidden,
	}
	if got := skippedMap(res); !mapsEqual(got, wantSkipped) {
		t.Fatalf("skipped %v, want %v", got, wantSkipped)
	}
	if res.SkippedTotal != 7 || res.SkippedBy[SkipBinary] != 2 {
		t.Fatalf("total %d by %v", res.SkippedTotal, res.SkippedBy)
	}
	wantMain := "--- BEGIN FILE: main.go (3 lines) ---\n   1│ package main\n   2│ \n   3│ func main() {}\n--- END FILE: main.go ---\n"
	if !strings.Contains(res.Text, wantMain) {
		t.Fatalf("text lacks main.go as rendered:\n%s", res.Text)
	}
	if strings.Index(res.Text, "lib/util.py") > strings.Index(res.Text, "README.md") {
		t.Fatal("docs came before source")
	}
	tokens := 0
	for _, s := range res.Sent {
		tokens += s.Tokens
	}
	if want, _ := Estimate(res.Text); tokens != res.Tokens || tokens < want || tokens > want+len(res.Sent) {
		t.Fatalf("tokens %d, result %d, estimate of all %d", tokens, res.Tokens, want)
	}
	lines := res.ProcessedLines()
	if lines[0] != "- lib/util.py" || !slices.Contains(lines, "- node_modules (skipped: excluded, generated or vendored directory)") {
		t.Fatalf("processed lines %q", lines)
	}
}

func mapsEqual[K comparable, V comparable](a, b map[K]V) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestEntryOrderWithinAClassAndNamedFiles(t *testing.T) {
	root := tree(t, map[string]string{"b.go": "package b\n", "a.go": "package a\n", "z/c.go": "package c\n", "vendor/v.go": "package v\n", "x.tmp": "named\n", ".gitignore": "*.tmp\n"})
	// A named file is taken even when ignored or vendored: the caller
	// asked for it.
	res, err := Gather(t.Context(), root, nil, []string{"z", "b.go", "vendor/v.go", "x.tmp", "a.go", "b.go"}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"z/c.go", "b.go", "vendor/v.go", "a.go", "x.tmp"}
	if got := sentPaths(res); !slices.Equal(got, want) {
		t.Fatalf("sent %q, want %q", got, want)
	}
}

func TestScanBelowTheRootHonoursTheRootGitignore(t *testing.T) {
	root := tree(t, map[string]string{".gitignore": "gen/\n*.out\n", "a/b/x.go": "package b\n", "a/b/gen/y.go": "package gen\n", "a/b/r.out": "out\n"})
	res, err := Gather(t.Context(), root, nil, []string{"a/b"}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := sentPaths(res); !slices.Equal(got, []string{"a/b/x.go"}) {
		t.Fatalf("sent %q skipped %v", got, res.Skipped)
	}
}

func TestLimits(t *testing.T) {
	files := map[string]string{}
	var entries []string
	for i := range 60 {
		p := fmt.Sprintf("many/f%02d.go", i)
		files[p] = "package many\n"
		entries = append(entries, p)
	}
	root := tree(t, files)
	big := filepath.Join(root, "big.txt")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(11 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	write(t, root, map[string]string{"dir/big.go": strings.Repeat("x", 2000), "dir/small.go": "package dir\n"})

	t.Run("51 named files", func(t *testing.T) {
		_, err := Gather(t.Context(), root, nil, entries[:51], nil, Options{})
		fe := asError(t, err, CategoryValidation)
		if fe.Category.Code() != -32602 || !strings.Contains(fe.Message, "the limit is 50 files") {
			t.Fatal(err)
		}
		if _, err := Gather(t.Context(), root, nil, entries[:50], nil, Options{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a directory of 60", func(t *testing.T) {
		res, err := Gather(t.Context(), root, nil, []string{"many"}, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Sent) != 50 || res.SkippedBy[SkipFileLimit] != 10 || res.Sent[49].Path != "many/f49.go" {
			t.Fatalf("sent %d, skipped %v", len(res.Sent), res.SkippedBy)
		}
	})
	t.Run("an 11 MB named file", func(t *testing.T) {
		_, err := Gather(t.Context(), root, nil, []string{"big.txt"}, nil, Options{})
		fe := asError(t, err, CategoryValidation)
		if fe.Entry != "big.txt" || !strings.Contains(fe.Message, "the limit is 10485760 bytes per file") {
			t.Fatal(err)
		}
	})
	t.Run("an 11 MB file in a directory", func(t *testing.T) {
		res, err := Gather(t.Context(), root, nil, []string{"."}, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if skippedMap(res)["big.txt"] != SkipTooLarge {
			t.Fatalf("skipped %v", res.Skipped)
		}
	})
	t.Run("budget", func(t *testing.T) {
		// big.go renders to about 530 estimated tokens: it does not fit
		// in 100, and the smaller file after it still does.
		res, err := Gather(t.Context(), root, nil, []string{"dir"}, nil, Options{MaxTokens: 100})
		if err != nil {
			t.Fatal(err)
		}
		if got := sentPaths(res); !slices.Equal(got, []string{"dir/small.go"}) || skippedMap(res)["dir/big.go"] != SkipBudget {
			t.Fatalf("sent %q skipped %v", got, res.Skipped)
		}
	})
	t.Run("the skipped list is bounded", func(t *testing.T) {
		res, err := Gather(t.Context(), root, nil, []string{"many"}, nil, Options{MaxFiles: 5, MaxSkippedListed: 3})
		if err != nil {
			t.Fatal(err)
		}
		lines := res.ProcessedLines()
		if len(res.Skipped) != 3 || res.SkippedTotal != 55 || lines[len(lines)-1] != "- … and 52 more skipped" {
			t.Fatalf("skipped %d of %d: %q", len(res.Skipped), res.SkippedTotal, lines)
		}
	})
}

func TestCounter(t *testing.T) {
	root := tree(t, map[string]string{"a.go": "package a\n", "b.go": "package b\n"})
	var counted []string
	count := func(text string) (int, error) {
		counted = append(counted, text)
		return 7, nil
	}
	res, err := Gather(t.Context(), root, nil, []string{"."}, nil, Options{Counter: count, MaxTokens: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(counted) != 2 || res.Tokens != 7 || len(res.Sent) != 1 || res.Sent[0].Tokens != 7 {
		t.Fatalf("counted %d, result %+v", len(counted), res)
	}
	boom := errors.New("quota exhausted")
	_, err = Gather(t.Context(), root, nil, []string{"."}, nil, Options{Counter: func(string) (int, error) { return 0, boom }})
	fe := asError(t, err, CategoryTool)
	if !errors.Is(err, boom) || fe.Category.Code() != -32603 {
		t.Fatal(err)
	}
}

func TestSeenSkipsUnchangedFiles(t *testing.T) {
	root := tree(t, map[string]string{"a.go": "package a\n", "b.go": "package b\n"})
	seen := Seen{}
	first, err := Gather(t.Context(), root, nil, []string{"."}, seen, Options{})
	if err != nil {
		t.Fatal(err)
	}
	first.Record(seen)
	write(t, root, map[string]string{"b.go": "package b // changed\n"})
	second, err := Gather(t.Context(), root, nil, []string{"."}, seen, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := sentPaths(second); !slices.Equal(got, []string{"b.go"}) || skippedMap(second)["a.go"] != SkipDuplicate {
		t.Fatalf("sent %q skipped %v", got, second.Skipped)
	}
	if strings.Contains(second.Text, "package a") || !strings.Contains(second.Text, "changed") {
		t.Fatalf("text %q", second.Text)
	}
}

func TestSymlinksInAScan(t *testing.T) {
	outside := tree(t, map[string]string{"secret.go": "package secret\n"})
	root := tree(t, map[string]string{"real/a.go": "package a\n"})
	mustSymlink(t, filepath.Join(outside, "secret.go"), filepath.Join(root, "out.go"))
	mustSymlink(t, filepath.Join(root, "real"), filepath.Join(root, "dirlink"))
	mustSymlink(t, filepath.Join(root, "real", "a.go"), filepath.Join(root, "alias.go"))
	mustSymlink(t, filepath.Join(root, "missing"), filepath.Join(root, "broken.go"))
	res, err := Gather(t.Context(), root, nil, []string{"."}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// alias.go and real/a.go are one file: it is sent once, under the
	// first path met.
	if got := sentPaths(res); !slices.Equal(got, []string{"alias.go"}) {
		t.Fatalf("sent %q", got)
	}
	want := map[string]Reason{"out.go": SkipOutside, "dirlink": SkipSymlink, "broken.go": SkipError}
	if got := skippedMap(res); !mapsEqual(got, want) {
		t.Fatalf("skipped %v", got)
	}
	if strings.Contains(res.Text, "secret") {
		t.Fatal("the outside file was sent")
	}
}

func TestRender(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "--- BEGIN FILE: f (0 lines) ---\n--- END FILE: f ---\n"},
		{"one", "--- BEGIN FILE: f (1 lines) ---\n   1│ one\n--- END FILE: f ---\n"},
		{"a\r\nb\r\n", "--- BEGIN FILE: f (2 lines) ---\n   1│ a\n   2│ b\n--- END FILE: f ---\n"},
		{"\xff\n", "--- BEGIN FILE: f (1 lines) ---\n   1│ \uFFFD\n--- END FILE: f ---\n"},
	} {
		if got, _ := Render("f", []byte(c.in)); got != c.want {
			t.Errorf("Render(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	got, n := Render("f", []byte(strings.Repeat("x\n", 12345)))
	if n != 12345 || !strings.Contains(got, "\n12345│ x\n") || !strings.Contains(got, "\n    1│ x\n") {
		t.Fatalf("%d lines, tail %q", n, got[len(got)-60:])
	}
}

// TestPackingSkipsAreListedFirst: when many files are ignored, the list
// still shows the file that did not fit in the budget, which is what the
// caller can act on.
func TestPackingSkipsAreListedFirst(t *testing.T) {
	files := map[string]string{".gitignore": "*.log\n", "big.go": strings.Repeat("x", 4000), "small.go": "package s\n"}
	for i := range 20 {
		files[fmt.Sprintf("l%02d.log", i)] = "log\n"
	}
	root := tree(t, files)
	res, err := Gather(t.Context(), root, nil, []string{"."}, nil, Options{MaxTokens: 200, MaxSkippedListed: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Skipped) != 5 || res.Skipped[0].Path != "big.go" || res.Skipped[0].Reason != SkipBudget || res.SkippedTotal != 21 || res.SkippedBy[SkipIgnored] != 20 {
		t.Fatalf("skipped %v, total %d, by %v", res.Skipped, res.SkippedTotal, res.SkippedBy)
	}
}

package docs

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's root, seen from this package's directory.
const root = ".."

// markdownFiles returns every markdown file of the repository, as paths
// relative to root with forward slashes, leaving out hidden directories,
// testdata and installed node modules.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			// dist/ is GoReleaser's output (ignored by git): the npm
			// packages there carry copies of the README.
			if p != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || (name == "dist" && filepath.Dir(p) == root)) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(name, ".md") {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(files, "README.md") {
		t.Fatalf("found no README.md under %s: %v", root, files)
	}
	return files
}

// doc is a markdown file as this test reads it: its text outside fenced
// code blocks (inline code spans blanked), and its headings' anchors.
type doc struct {
	prose   []string // lines outside fenced blocks, inline code removed
	anchors map[string]bool
}

var (
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	inlineCode = regexp.MustCompile("`+[^`]*`+")
	heading    = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)
	// link matches an inline link or image: [text](target "title").
	link = regexp.MustCompile(`\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
)

func readDoc(t *testing.T, rel string) *doc {
	t.Helper()
	f, err := os.Open(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := &doc{anchors: map[string]bool{}}
	seen := map[string]int{}
	inFence := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			slug := Slug(m[2])
			if n := seen[slug]; n > 0 {
				d.anchors[fmt.Sprintf("%s-%d", slug, n)] = true
			} else {
				d.anchors[slug] = true
			}
			seen[slug]++
		}
		d.prose = append(d.prose, inlineCode.ReplaceAllString(line, ""))
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return d
}

// Slug is the anchor GitHub gives a heading: its text in lower case, with
// every character but letters, digits, spaces, hyphens and underscores
// dropped, and spaces made hyphens. (Duplicates get -1, -2… in readDoc.)
func Slug(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

func TestSlug(t *testing.T) {
	for text, want := range map[string]string{
		"Register it with a client":                     "register-it-with-a-client",
		"Several replicas: `--stateless`":               "several-replicas---stateless",
		"Gemini with tools: the server as an MCP host":  "gemini-with-tools-the-server-as-an-mcp-host",
		"Redis, for replicas":                           "redis-for-replicas",
		"Warm backend (what `auto` runs; `--x` off)":    "warm-backend-what-auto-runs---x-off",
		"The API backend's `temperature`, and _meta.x!": "the-api-backends-temperature-and-_metax",
	} {
		if got := Slug(text); got != want {
			t.Errorf("Slug(%q) = %q, want %q", text, got, want)
		}
	}
}

// TestLinks checks every relative link of every markdown file: the file
// or directory it names exists, and its #anchor, if any, is a heading of
// the markdown file it points into.
func TestLinks(t *testing.T) {
	files := markdownFiles(t)
	docs := map[string]*doc{}
	for _, rel := range files {
		docs[rel] = readDoc(t, rel)
	}
	checked := 0
	for _, rel := range files {
		for i, line := range docs[rel].prose {
			for _, m := range link.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				where := fmt.Sprintf("%s:%d: link %q", rel, i+1, target)
				file, anchor, _ := strings.Cut(target, "#")
				dest := rel
				if file != "" {
					dest = path.Clean(path.Join(path.Dir(rel), file))
					if strings.HasPrefix(dest, "../") || dest == ".." {
						t.Errorf("%s leads out of the repository", where)
						continue
					}
					if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(dest))); err != nil {
						t.Errorf("%s: no such file: %s", where, dest)
						continue
					}
				}
				if anchor == "" {
					continue
				}
				d, ok := docs[dest]
				if !ok {
					t.Errorf("%s: an anchor into %s, which is not a markdown file", where, dest)
					continue
				}
				if !d.anchors[anchor] {
					t.Errorf("%s: %s has no heading with the anchor #%s", where, dest, anchor)
				}
			}
		}
	}
	if checked < 50 {
		t.Errorf("only %d relative links found in %d files: is the link pattern still right?", checked, len(files))
	}
}

// TestPackageMap checks that architecture.md's package maps have one line
// per package `go list ./...` lists, and no line for anything else: the
// product's module's map under "## Package map", the workshop's
// (workshop/) under "## The workshop".
func TestPackageMap(t *testing.T) {
	b, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	checkPackageMap(t, string(b), "## Package map", root, 10)
	checkPackageMap(t, string(b), "## The workshop", filepath.Join(root, "workshop"), 5)
}

// checkPackageMap checks the first fenced block under heading against the
// packages of the module in dir, named by their paths from its root.
func checkPackageMap(t *testing.T, s, heading, dir string, atLeast int) {
	t.Helper()
	i := strings.Index(s, "\n"+heading+"\n")
	if i < 0 {
		t.Fatalf("architecture.md has no %q section", heading)
	}
	s = s[i:]
	start := strings.Index(s, "\n```\n")
	if start < 0 {
		t.Fatalf("the package map of %q has no fenced block", heading)
	}
	s = s[start+5:]
	end := strings.Index(s, "\n```")
	if end < 0 {
		t.Fatalf("the package map of %q's fenced block does not end", heading)
	}
	mapped := map[string]int{}
	for _, line := range strings.Split(s[:end], "\n") {
		fields := strings.Fields(line)
		if len(fields) < 2 {
			t.Errorf("package map line %q: want a package and what it owns", line)
			continue
		}
		mapped[fields[0]]++
	}

	modPath := goCmdIn(t, dir, "list", "-m")
	var listed []string
	for _, p := range strings.Fields(goCmdIn(t, dir, "list", "./...")) {
		rel, ok := strings.CutPrefix(p, modPath+"/")
		if !ok {
			t.Fatalf("go list gave %q, outside the module %s", p, modPath)
		}
		listed = append(listed, rel)
	}
	if len(listed) < atLeast {
		t.Fatalf("go list ./... in %s listed only %v", dir, listed)
	}
	for _, p := range listed {
		if mapped[p] == 0 {
			t.Errorf("package %s is missing from architecture.md's package map under %q", p, heading)
		}
	}
	for p, n := range mapped {
		if !slices.Contains(listed, p) {
			t.Errorf("architecture.md's package map under %q names %s, which go list ./... in %s does not list", heading, p, dir)
		}
		if n > 1 {
			t.Errorf("architecture.md's package map under %q names %s %d times", heading, p, n)
		}
	}
}

// goCmd runs the go command in the repository's root, on the product's
// module alone.
func goCmd(t *testing.T, args ...string) string {
	t.Helper()
	return goCmdIn(t, root, args...)
}

// goCmdIn runs the go command in dir, on the module there alone
// (GOWORK=off: not the workspace go.work makes of the product and the
// workshop), and returns its standard output, trimmed.
func goCmdIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// TestReadmeIsAFrontPage keeps the README short: what the project is, the
// two commands, registering it, the backends, and links to docs/.
func TestReadmeIsAFrontPage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > 250 {
		t.Errorf("README.md has %d lines; keep it under 250 and put the rest in docs/", n)
	}
}

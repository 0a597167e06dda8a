package filectx

import (
	"bufio"
	"bytes"
	"os"
	"path"
	"strings"
)

// Ignore holds the patterns of one .gitignore file, to be matched against
// paths relative to the directory that holds it. It implements the parts
// of gitignore(5) that decide what is sent:
//   - blank lines and lines starting with "#" are skipped; "\#" and "\!"
//     start a pattern with a literal "#" or "!"; trailing spaces are
//     dropped unless escaped with a backslash;
//   - "!" negates: a later negated pattern re-includes what an earlier one
//     ignored (but nothing inside an ignored directory, which is never
//     entered);
//   - a trailing "/" matches directories only;
//   - a pattern with a "/" at its start or in its middle is anchored to
//     the .gitignore's directory; one without matches a name at any depth;
//   - "*" and "?" match within one path segment, "[...]" (with "!" or "^"
//     to negate) one character, "\" escapes;
//   - "**/" at the start matches in all directories, "/**" at the end
//     everything inside, "/**/" zero or more directories.
//
// A pattern that does not compile (an unclosed "[") matches nothing, as in
// git. The last matching pattern decides. As in git (2.32 and later), a
// .gitignore that is a symbolic link is not followed; nor is one that is
// not a regular file or is larger than 1 MiB read.
//
// A small implementation of our own instead of a dependency: the
// maintained Go implementations come inside large modules (go-git), and
// these rules fit in a page that the fuzz test checks.
type Ignore struct {
	rules []ignoreRule
}

type ignoreRule struct {
	segs     []string // the pattern split at "/"
	anchored bool
	dirOnly  bool
	negate   bool
}

// ParseIgnore reads the patterns of a .gitignore file's content.
func ParseIgnore(content []byte) *Ignore {
	ig := &Ignore{}
	sc := bufio.NewScanner(bytes.NewReader(content))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		if r, ok := parseIgnoreLine(sc.Text()); ok {
			ig.rules = append(ig.rules, r)
		}
	}
	return ig
}

func parseIgnoreLine(line string) (ignoreRule, bool) {
	line = strings.TrimSuffix(line, "\r")
	line = trimTrailingSpaces(line)
	if line == "" || strings.HasPrefix(line, "#") {
		return ignoreRule{}, false
	}
	var r ignoreRule
	switch {
	case strings.HasPrefix(line, "!"):
		r.negate = true
		line = line[1:]
	case strings.HasPrefix(line, `\!`), strings.HasPrefix(line, `\#`):
		line = line[1:]
	}
	if strings.HasSuffix(line, "/") {
		r.dirOnly = true
		line = strings.TrimRight(line, "/")
	}
	if line == "" {
		return ignoreRule{}, false
	}
	if strings.Contains(line, "/") {
		r.anchored = true
		line = strings.TrimPrefix(line, "/")
	}
	if line == "" {
		return ignoreRule{}, false
	}
	r.segs = strings.Split(line, "/")
	// "a//b" means "a/b".
	segs := r.segs[:0]
	for _, s := range r.segs {
		if s != "" {
			segs = append(segs, s)
		}
	}
	r.segs = segs
	for i, s := range r.segs {
		// path.Match negates a class with "^"; gitignore also with "!".
		r.segs[i] = strings.ReplaceAll(s, "[!", "[^")
	}
	return r, len(r.segs) > 0
}

// trimTrailingSpaces drops unescaped trailing spaces.
func trimTrailingSpaces(s string) string {
	for strings.HasSuffix(s, " ") {
		t := s[:len(s)-1]
		// Count the backslashes before the space: an odd number escapes it.
		n := 0
		for i := len(t) - 1; i >= 0 && t[i] == '\\'; i-- {
			n++
		}
		if n%2 == 1 {
			return s
		}
		s = t
	}
	return s
}

// Match reports whether rel (slash-separated, relative to the .gitignore's
// directory) is ignored, and whether any pattern spoke about it at all
// (so that a deeper file's silence leaves the decision to a shallower one).
func (ig *Ignore) Match(rel string, isDir bool) (ignored, decided bool) {
	if ig == nil || rel == "" || rel == "." {
		return false, false
	}
	segs := strings.Split(rel, "/")
	for i := len(ig.rules) - 1; i >= 0; i-- {
		r := ig.rules[i]
		if r.dirOnly && !isDir {
			continue
		}
		if r.matches(segs) {
			return !r.negate, true
		}
	}
	return false, false
}

func (r ignoreRule) matches(segs []string) bool {
	if !r.anchored {
		// A name pattern matches the last segment; the walk asks about
		// every directory on the way, so matching deeper names is not
		// needed.
		ok, _ := path.Match(r.segs[0], segs[len(segs)-1])
		return ok
	}
	return matchSegs(r.segs, segs)
}

// matchSegs matches pattern segments against path segments, "**" standing
// for any number of segments (at least one when it ends the pattern).
func matchSegs(pat, segs []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			if len(rest) == 0 {
				return len(segs) > 0
			}
			for i := 0; i <= len(segs); i++ {
				if matchSegs(rest, segs[i:]) {
					return true
				}
			}
			return false
		}
		if len(segs) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], segs[0]); !ok {
			return false
		}
		pat, segs = pat[1:], segs[1:]
	}
	return len(segs) == 0
}

// maxIgnoreBytes bounds the .gitignore files read; a larger one is not
// honoured (git itself refuses those over 100 MiB).
const maxIgnoreBytes = 1 << 20

// ignoreLevel is a .gitignore and the directory (relative to the root)
// that holds it.
type ignoreLevel struct {
	dir string // "" for the root
	ig  *Ignore
}

// ignoreStack is the .gitignore files from the root down to a directory.
type ignoreStack []ignoreLevel

// ignored asks the deepest .gitignore first: a deeper file overrides a
// shallower one.
func (st ignoreStack) ignored(rel string, isDir bool) bool {
	for i := len(st) - 1; i >= 0; i-- {
		l := st[i]
		sub := rel
		if l.dir != "" {
			if !strings.HasPrefix(rel, l.dir+"/") {
				continue
			}
			sub = rel[len(l.dir)+1:]
		}
		if ig, decided := l.ig.Match(sub, isDir); decided {
			return ig
		}
	}
	return false
}

// withDir returns the stack with the .gitignore of absDir (relative rel)
// added, when there is one. The stack is copied, since siblings share the
// parent's.
func (st ignoreStack) withDir(absDir, rel string) ignoreStack {
	name := absDir + string(os.PathSeparator) + ".gitignore"
	// Only a regular file of sensible size is read: opening a named pipe
	// would block the scan, and a link could lead anywhere.
	info, err := os.Lstat(name)
	if err != nil || !info.Mode().IsRegular() || info.Size() == 0 || info.Size() > maxIgnoreBytes {
		return st
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return st
	}
	if rel == "." {
		rel = ""
	}
	out := make(ignoreStack, len(st), len(st)+1)
	copy(out, st)
	return append(out, ignoreLevel{dir: rel, ig: ParseIgnore(data)})
}

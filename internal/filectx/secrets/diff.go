package secrets

import (
	"strconv"
	"strings"
)

// ScanDiff returns the findings on the lines a unified diff adds, in
// order: "+++ b/path" names the file, "@@ -a,b +c,d @@" the line numbers;
// removed lines are not read (removing a secret is not committing one).
func ScanDiff(diff string) []Finding {
	var out []Finding
	file, line := "", 0
	inHunk := false
	lowerDiff := asciiLower(diff)
	active := activePatterns(lowerDiff)
	lowers := strings.Split(lowerDiff, "\n")
	for i, raw := range strings.Split(diff, "\n") {
		raw = strings.TrimSuffix(raw, "\r")
		switch {
		case strings.HasPrefix(raw, "diff "):
			inHunk = false
		case !inHunk && strings.HasPrefix(raw, "+++ "):
			file = diffPath(raw[4:])
		case strings.HasPrefix(raw, "@@ "):
			line, inHunk = hunkStart(raw), true
		case inHunk && strings.HasPrefix(raw, "+"):
			for _, f := range scanLine(raw[1:], lowers[i][1:], active) {
				f.File, f.Line = file, line
				out = append(out, f)
			}
			line++
		case inHunk && strings.HasPrefix(raw, " "):
			line++
		}
	}
	return out
}

// ScanText returns the findings in a whole file's text.
func ScanText(file, text string) []Finding {
	var out []Finding
	lowerText := asciiLower(text)
	active := activePatterns(lowerText)
	lowers := strings.Split(lowerText, "\n")
	for i, l := range strings.Split(text, "\n") {
		n := i + 1
		for _, f := range scanLine(strings.TrimSuffix(l, "\r"), lowers[i], active) {
			f.File, f.Line = file, n
			out = append(out, f)
		}
	}
	return out
}

// diffPath turns "b/dir/x.go" (or a quoted "\"b/dir/x\"") into dir/x.go.
func diffPath(p string) string {
	p = strings.TrimSpace(p)
	if u, err := strconv.Unquote(p); err == nil {
		p = u
	}
	if p == "/dev/null" {
		return p
	}
	_, rest, ok := strings.Cut(p, "/")
	if !ok {
		return p
	}
	return rest
}

// hunkStart reads the new version's first line from "@@ -a,b +c,d @@".
func hunkStart(h string) int {
	_, rest, ok := strings.Cut(h, " +")
	if !ok {
		return 1
	}
	num := rest
	if i := strings.IndexAny(num, ", "); i >= 0 {
		num = num[:i]
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 {
		return 1
	}
	return n
}

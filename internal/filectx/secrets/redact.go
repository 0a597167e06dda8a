package secrets

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// The lines of a PEM private key block: the header, which ScanLine
// reports as private-key, and the footer, after which the block ends.
// OpenSSH, PKCS#1, PKCS#8, encrypted, PGP ("PRIVATE KEY BLOCK") and
// SSH2 ("---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----") spellings are
// taken.
const (
	pemBeginRe = `-{4,5} ?BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)? ?-{4,5}`
	pemEndRe   = `-{4,5} ?END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)? ?-{4,5}`
)

var pemRes = sync.OnceValues(func() (*regexp.Regexp, *regexp.Regexp) {
	return regexp.MustCompile(pemBeginRe), regexp.MustCompile(pemEndRe)
})

// KeyLine replaces each line of a private key block after its header.
const KeyLine = "[private key line withheld by the server]"

// opensBlock reports whether line starts a private key block that does
// not end on the same line (a key written on one line, as the \n-escaped
// private_key of a JSON service account file, is one line).
func opensBlock(line string) bool {
	if !strings.Contains(line, "PRIVATE KEY") {
		return false
	}
	begin, end := pemRes()
	locs := begin.FindAllStringIndex(line, -1)
	if len(locs) == 0 {
		return false
	}
	return !end.MatchString(line[locs[len(locs)-1][1]:])
}

// closesBlock reports whether line holds a private key block's footer.
func closesBlock(line string) bool {
	if !strings.Contains(line, "PRIVATE KEY") {
		return false
	}
	_, end := pemRes()
	return end.MatchString(line)
}

// note is what replaces a line that holds secrets.
func note(found []Finding) string {
	kinds := make([]string, len(found))
	for j, f := range found {
		kinds[j] = f.Kind + " " + f.Masked
	}
	return "[line withheld by the server: it holds a secret: " + strings.Join(kinds, "; ") + "]"
}

// Redact returns a file's text with its secrets withheld, and the
// findings (File set to file, Line from 1). A line holding a secret that
// ScanLine finds is replaced by a note naming it masked; a private key
// block is withheld whole, from its header (replaced by the note) through
// its footer, each line replaced by KeyLine, or to the end of the text
// when it has no footer. The number of lines does not change, so line
// numbers still point at the file.
func Redact(file, text string) (string, []Finding) {
	var out []Finding
	var b strings.Builder
	lower := asciiLower(text)
	active := activePatterns(lower)
	hits := hintedLines(lower, active)
	b.Grow(len(text))
	inBlock := false
	n := 0
	changed := false
	for off := 0; off <= len(text); {
		end := strings.IndexByte(text[off:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += off
		}
		l, ll := text[off:end], lower[off:end]
		hit := len(hits) > 0 && hits[0] == off
		if hit {
			hits = hits[1:]
		}
		off = end + 1
		n++
		if n > 1 {
			b.WriteByte('\n')
		}
		line := strings.TrimSuffix(l, "\r")
		if inBlock {
			inBlock = !closesBlock(line) || opensBlock(line)
			b.WriteString(KeyLine)
			changed = true
			continue
		}
		if !hit {
			b.WriteString(l)
			continue
		}
		found := scanLine(line, ll, active)
		inBlock = opensBlock(line)
		if len(found) == 0 {
			b.WriteString(l)
			continue
		}
		for i := range found {
			found[i].File, found[i].Line = file, n
		}
		out = append(out, found...)
		b.WriteString(note(found))
		changed = true
	}
	if !changed {
		return text, out
	}
	return b.String(), out
}

// hintedLines returns, in order, the offsets in lower (a text in lower
// case) of the lines that hold a hint of an active pattern: the only
// lines where a secret, or a private key block's header, can be. One
// search of the text per hint is much cheaper than a look at every line.
func hintedLines(lower string, active []bool) []int {
	var starts []int
	done := map[string]bool{}
	for i, p := range compiledPatterns() {
		if !active[i] {
			continue
		}
		for _, h := range p.hints {
			if done[h] {
				continue
			}
			done[h] = true
			for off := 0; off < len(lower); {
				j := strings.Index(lower[off:], h)
				if j < 0 {
					break
				}
				j += off
				starts = append(starts, strings.LastIndexByte(lower[:j], '\n')+1)
				e := strings.IndexByte(lower[j:], '\n')
				if e < 0 {
					break
				}
				off = j + e + 1
			}
		}
	}
	slices.Sort(starts)
	return slices.Compact(starts)
}

// Withheld is a file whose changes RedactDiff left out, and why.
type Withheld struct {
	Path string
	Why  string
}

// RedactDiff returns a unified diff with its secrets withheld. Every line
// of a hunk (added, removed or context: sending any of them leaks the
// secret) that holds a secret is replaced by a note, after its +, - or
// space; a private key block is withheld whole, from its header through
// its footer (or to the end of the file's diff), and a block that a hunk
// starts inside (its footer shows without its header) from the hunk's
// first line. When skip reports a file's path (the new one, or the old
// one of a deletion), its hunks are replaced by one note and the file is
// returned among the withheld. skip may be nil.
func RedactDiff(diff string, skip func(path string) (string, bool)) (string, []Withheld) {
	lines := strings.Split(diff, "\n")
	lowerDiff := asciiLower(diff)
	lowers := strings.Split(lowerDiff, "\n")
	active := activePatterns(lowerDiff)
	out := make([]string, 0, len(lines))
	var withheld []Withheld
	var (
		oldFile         string
		inHunk, inBlock bool
		skipFile, noted bool
		hunkStart       int // index in out of the current hunk's first line
	)
	for i, raw := range lines {
		l := strings.TrimSuffix(raw, "\r")
		switch {
		case strings.HasPrefix(l, "diff ") || strings.HasPrefix(l, "## "):
			// A new file, or a part of the changes (Diff's headings).
			inHunk, inBlock, skipFile, noted, oldFile = false, false, false, false, ""
			out = append(out, raw)
			continue
		case !inHunk && strings.HasPrefix(l, "--- "):
			oldFile = diffPath(l[4:])
			out = append(out, raw)
			continue
		case !inHunk && strings.HasPrefix(l, "+++ "):
			file := diffPath(l[4:])
			if file == "/dev/null" {
				file = oldFile
			}
			if skip != nil {
				if why, ok := skip(file); ok {
					skipFile = true
					withheld = append(withheld, Withheld{Path: file, Why: why})
				}
			}
			out = append(out, raw)
			continue
		case strings.HasPrefix(l, "@@ "):
			inHunk = true
			if skipFile {
				if !noted {
					out = append(out, "[the changes to this file are withheld by the server: it is a credential file]")
					noted = true
				}
				continue
			}
			out = append(out, raw)
			hunkStart = len(out)
			continue
		}
		if !inHunk || l == "" || !strings.ContainsRune("+- ", rune(l[0])) {
			if !(skipFile && inHunk && strings.HasPrefix(l, `\`)) {
				out = append(out, raw)
			}
			continue
		}
		if skipFile {
			continue
		}
		body := l[1:]
		if inBlock {
			inBlock = !closesBlock(body) || opensBlock(body)
			out = append(out, l[:1]+KeyLine)
			continue
		}
		found := scanLine(body, lowers[i][1:], active)
		switch {
		case len(found) == 0 && closesBlock(body):
			// The hunk starts inside a key: what it showed of it so far
			// is the key's too.
			for j := hunkStart; j < len(out); j++ {
				if out[j] != "" && strings.ContainsRune("+- ", rune(out[j][0])) {
					out[j] = out[j][:1] + KeyLine
				}
			}
			out = append(out, l[:1]+KeyLine)
		default:
			inBlock = opensBlock(body)
			if len(found) == 0 {
				out = append(out, raw)
				continue
			}
			out = append(out, l[:1]+note(found))
		}
	}
	return strings.Join(out, "\n"), withheld
}

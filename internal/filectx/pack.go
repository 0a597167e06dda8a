package filectx

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx/secrets"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
)

// Seen is what a conversation has sent: path relative to the root → the
// SHA-256 (hex) of the content sent. The caller keeps it with the thread
// and adds each Result's Sent files to it.
type Seen map[string]string

// Sent is a file that went into the context.
type Sent struct {
	Path   string `json:"path"`
	Class  string `json:"class"`
	Bytes  int64  `json:"bytes"`
	Lines  int    `json:"lines"`
	Tokens int    `json:"tokens"`
	Hash   string `json:"sha256"`
	// Secrets are the secrets withheld from what was sent (the lines that
	// held them replaced by a note, a private key block whole).
	Secrets []secrets.Finding `json:"secrets,omitempty"`
}

// Result is the packed file context: the rendered text, what went in and
// what did not.
type Result struct {
	Text string `json:"-"`
	// Media are the media files sent (Options.Media), which Sent lists
	// too with class "media" and no tokens: the API counts them itself.
	Media   []MediaFile `json:"-"`
	Tokens  int         `json:"tokens"`
	Sent    []Sent      `json:"sent"`
	Skipped []Skipped   `json:"skipped,omitempty"`
	// SkippedTotal counts every skipped file and directory; Skipped lists
	// at most Options.MaxSkippedListed of them.
	SkippedTotal int `json:"skippedTotal"`
	// SkippedBy counts the skipped by reason.
	SkippedBy map[Reason]int `json:"skippedBy,omitempty"`
}

// Gather resolves, scans and packs the files entries: ScanEntries then
// Pack. The root and forbidden paths make the sandbox.
func Gather(ctx context.Context, root string, forbidden, entries []string, seen Seen, opts Options) (*Result, error) {
	s, err := NewSandbox(root, forbidden)
	if err != nil {
		return nil, err
	}
	sc, err := s.ScanEntries(ctx, entries, opts)
	if err != nil {
		return nil, err
	}
	return sc.Pack(ctx, seen, opts)
}

// Pack reads the candidates in priority order and packs them into the
// token budget. seen may be nil. The Result lists the files skipped while
// packing (budget, duplicate, file limit: what the caller can act on)
// before those the scan left out.
func (sc *Scan) Pack(ctx context.Context, seen Seen, opts Options) (*Result, error) {
	opts = opts.withDefaults()
	res := &Result{SkippedBy: map[Reason]int{}}
	var out strings.Builder
	left := opts.MaxTokens
	mediaLeft := opts.MaxMediaBytes
	for _, c := range sc.Media {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(res.Sent) >= opts.MaxFiles {
			res.skip(Skipped{Path: c.Rel, Reason: SkipFileLimit, Detail: fmt.Sprintf("the limit is %d files per request", opts.MaxFiles)}, opts.MaxSkippedListed)
			continue
		}
		data, reason, detail := readMedia(c, mediaLeft)
		if reason != "" {
			res.skip(Skipped{Path: c.Rel, Reason: reason, Detail: detail}, opts.MaxSkippedListed)
			continue
		}
		sum := sha256.Sum256(data)
		hash := hex.EncodeToString(sum[:])
		if seen != nil && seen[c.Rel] == hash {
			res.skip(Skipped{Path: c.Rel, Reason: SkipDuplicate, Detail: "already sent in this conversation, unchanged"}, opts.MaxSkippedListed)
			continue
		}
		mediaLeft -= int64(len(data))
		res.Media = append(res.Media, MediaFile{Path: c.Rel, Abs: c.Path, MIMEType: c.MIMEType, Data: data, Hash: hash})
		res.Sent = append(res.Sent, Sent{Path: c.Rel, Class: "media", Bytes: int64(len(data)), Hash: hash})
	}
	for _, c := range sc.Candidates {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(res.Sent) >= opts.MaxFiles {
			res.skip(Skipped{Path: c.Rel, Reason: SkipFileLimit, Detail: fmt.Sprintf("the limit is %d files per request", opts.MaxFiles)}, opts.MaxSkippedListed)
			continue
		}
		data, reason, detail := readCandidate(c, opts.MaxFileBytes)
		if reason != "" {
			res.skip(Skipped{Path: c.Rel, Reason: reason, Detail: detail}, opts.MaxSkippedListed)
			continue
		}
		sum := sha256.Sum256(data)
		hash := hex.EncodeToString(sum[:])
		if seen != nil && seen[c.Rel] == hash {
			res.skip(Skipped{Path: c.Rel, Reason: SkipDuplicate, Detail: "already sent in this conversation, unchanged"}, opts.MaxSkippedListed)
			continue
		}
		// The secrets are withheld before anything counts or sends the
		// text (a token counter is the backend too); the hash is the
		// file's own, so that a change in a secret is a change.
		masked, found := secrets.Redact(c.Rel, strings.ToValidUTF8(string(data), "\uFFFD"))
		text, lines := Render(c.Rel, []byte(masked))
		n, err := opts.Counter(text)
		if err != nil {
			return nil, &Error{Category: CategoryTool, Field: "files", Entry: c.Rel, Err: err, Message: fmt.Sprintf("counting the tokens of %s failed: %v; try again, or name fewer files", c.Rel, err)}
		}
		if n > left {
			res.skip(Skipped{Path: c.Rel, Reason: SkipBudget, Detail: fmt.Sprintf("needs %d tokens, %d of %d left", n, left, opts.MaxTokens)}, opts.MaxSkippedListed)
			continue
		}
		left -= n
		if out.Len() > 0 {
			out.WriteByte('\n')
		}
		out.WriteString(text)
		res.Tokens += n
		res.Sent = append(res.Sent, Sent{Path: c.Rel, Class: c.Class.String(), Bytes: int64(len(data)), Lines: lines, Tokens: n, Hash: hash, Secrets: found})
	}
	res.Text = out.String()
	res.SkippedTotal += sc.SkippedTotal
	for r, n := range sc.SkippedBy {
		res.SkippedBy[r] += n
	}
	for _, s := range sc.Skipped {
		if len(res.Skipped) >= opts.MaxSkippedListed {
			break
		}
		res.Skipped = append(res.Skipped, s)
	}
	if len(res.SkippedBy) == 0 {
		res.SkippedBy = nil
	}
	return res, nil
}

func (r *Result) skip(s Skipped, max int) {
	r.SkippedTotal++
	r.SkippedBy[s.Reason]++
	if len(r.Skipped) < max {
		r.Skipped = append(r.Skipped, s)
	}
}

// readCandidate reads a file, or says why it is skipped. The size is
// checked again on reading, since the file may have grown since the scan.
func readCandidate(c Candidate, max int64) ([]byte, Reason, string) {
	data, reason, why := readCapped(c, max)
	if reason != "" {
		if reason == SkipTooLarge {
			why = fmt.Sprintf("more than %d bytes", max)
		}
		return nil, reason, why
	}
	if IsBinary(data) {
		return nil, SkipBinary, "NUL bytes in its first 8 KiB"
	}
	return data, "", ""
}

// readCapped reads the file of c whole, or says why not: SkipError with
// the error, or SkipTooLarge when it holds more than max bytes (of which
// it reads max+1 at the most). It reads only the regular file the scan
// found: a file swapped since for a symbolic link (out of the root, say),
// a FIFO or a device is skipped, and opening it never blocks.
func readCapped(c Candidate, max int64) ([]byte, Reason, string) {
	f, err := openFile(c.Path)
	if err != nil {
		return nil, SkipError, err.Error()
	}
	defer f.Close()
	info, err := f.Stat()
	switch {
	case err != nil:
		return nil, SkipError, err.Error()
	case !info.Mode().IsRegular():
		return nil, SkipSpecial, modeName(info.Mode()) + ", changed since the scan"
	case c.info != nil && !os.SameFile(c.info, info):
		return nil, SkipError, "replaced by another file since the scan"
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, SkipError, err.Error()
	}
	if int64(len(data)) > max {
		return nil, SkipTooLarge, ""
	}
	return data, "", ""
}

// IsBinary reports whether data looks binary: a NUL byte in its first
// 8 KiB, the test git uses.
func IsBinary(data []byte) bool {
	if len(data) > 8<<10 {
		data = data[:8<<10]
	}
	return bytes.IndexByte(data, 0) >= 0
}

// Render returns a file's text as sent to Gemini, with its header, line
// numbers and footer, and its number of lines. The name is quoted when it
// holds what could end the header's line or pass for a header
// (msg.QuoteName).
func Render(rel string, data []byte) (string, int) {
	name := msg.QuoteName(rel)
	body := string(data)
	if !utf8.ValidString(body) {
		body = strings.ToValidUTF8(body, "\uFFFD")
	}
	body = strings.TrimSuffix(body, "\n")
	lines := 0
	if len(data) > 0 {
		lines = strings.Count(body, "\n") + 1
	}
	width := len(strconv.Itoa(lines))
	if width < 4 {
		width = 4
	}
	var b strings.Builder
	b.Grow(len(body) + lines*(width+3) + 2*len(name) + 64)
	fmt.Fprintf(&b, "--- BEGIN FILE: %s (%d lines) ---\n", name, lines)
	n := 0
	for rest := body; lines > 0; {
		n++
		line, tail, more := strings.Cut(rest, "\n")
		num := strconv.Itoa(n)
		for i := len(num); i < width; i++ {
			b.WriteByte(' ')
		}
		b.WriteString(num)
		b.WriteString("│ ")
		b.WriteString(strings.TrimSuffix(line, "\r"))
		b.WriteByte('\n')
		if !more {
			break
		}
		rest = tail
	}
	fmt.Fprintf(&b, "--- END FILE: %s ---\n", name)
	return b.String(), lines
}

// ProcessedLines returns the lines of a "## Files Processed" section: each
// sent file, then each listed skipped one with its reason, then how many
// more were skipped.
func (r *Result) ProcessedLines() []string {
	out := make([]string, 0, len(r.Sent)+len(r.Skipped)+1)
	for _, s := range r.Sent {
		line := "- " + msg.QuoteName(s.Path)
		if len(s.Secrets) > 0 {
			line += fmt.Sprintf(" (%d secrets withheld)", len(s.Secrets))
		}
		out = append(out, line)
	}
	for _, s := range r.Skipped {
		line := fmt.Sprintf("- %s (skipped: %s", msg.QuoteName(s.Path), s.Reason)
		if s.Detail != "" {
			line += ", " + s.Detail
		}
		out = append(out, line+")")
	}
	if more := r.SkippedTotal - len(r.Skipped); more > 0 {
		out = append(out, fmt.Sprintf("- … and %d more skipped", more))
	}
	return out
}

// Record adds the sent files to seen (which must not be nil).
func (r *Result) Record(seen Seen) {
	for _, s := range r.Sent {
		seen[s.Path] = s.Hash
	}
}

// ReadCandidate reads a file a scan found, as Pack does, or says why it
// is skipped: unreadable, grown over max bytes since the scan, or binary
// (NUL bytes in its first 8 KiB).
func ReadCandidate(c Candidate, max int64) ([]byte, Reason, string) {
	return readCandidate(c, max)
}

package gitchanges

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
)

// newFile renders an untracked file as a diff that adds it, and says
// whether it is binary.
func (r *runner) newFile(top, rel string) (string, bool) {
	abs := filepath.Join(top, filepath.FromSlash(rel))
	a, bname := diffName("a/", rel), diffName("b/", rel)
	header := fmt.Sprintf("diff --git %s %s\nnew file (untracked)\n", a, bname)
	info, err := os.Lstat(abs)
	if err != nil {
		return header + fmt.Sprintf("[cannot be read: %v]\n", err), false
	}
	if info.Mode()&os.ModeSymlink != 0 {
		target, _ := os.Readlink(abs)
		return header + fmt.Sprintf("--- /dev/null\n+++ %s\n@@ -0,0 +1 @@\n+%s\n\\ No newline at end of file (symbolic link)\n", bname, msg.QuoteName(target)), false
	}
	if !info.Mode().IsRegular() {
		return header + "[not a regular file]\n", false
	}
	f, err := openRegular(abs)
	if err != nil {
		return header + fmt.Sprintf("[cannot be read: %v]\n", err), false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, r.opts.MaxNewFileSize+1))
	if err != nil {
		return header + fmt.Sprintf("[cannot be read: %v]\n", err), false
	}
	head := data
	if len(head) > 8<<10 {
		head = head[:8<<10]
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return header + fmt.Sprintf("Binary files /dev/null and %s differ\n", bname), true
	}
	cut := int64(len(data)) > r.opts.MaxNewFileSize
	if cut {
		data = data[:r.opts.MaxNewFileSize]
		if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
			data = data[:i+1]
		}
	}
	text := strings.ToValidUTF8(string(data), "\uFFFD")
	noEOL := text != "" && !strings.HasSuffix(text, "\n")
	text = strings.TrimSuffix(text, "\n")
	var lines []string
	if len(data) > 0 {
		lines = strings.Split(text, "\n")
	}
	var b strings.Builder
	b.WriteString(header)
	if len(lines) == 0 {
		return b.String(), false
	}
	fmt.Fprintf(&b, "--- /dev/null\n+++ %s\n@@ -0,0 +1,%d @@\n", bname, len(lines))
	for _, l := range lines {
		b.WriteString("+")
		b.WriteString(l)
		b.WriteString("\n")
	}
	if noEOL {
		b.WriteString("\\ No newline at end of file\n")
	}
	if cut {
		fmt.Fprintf(&b, "[the rest of %s is not shown: it is larger than %d bytes]\n", msg.QuoteName(rel), r.opts.MaxNewFileSize)
	}
	return b.String(), false
}

// diffName is an untracked file's name in its diff header: prefix and
// rel, quoted as git quotes the names of tracked files when rel holds
// what could end the line (msg.QuoteName), so that a name cannot forge a
// header.
func diffName(prefix, rel string) string {
	if msg.QuoteName(rel) == rel {
		return prefix + rel
	}
	return strconv.Quote(prefix + rel)
}

package filesearch

import (
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
)

// Citation is a file an answer cites.
type Citation struct {
	Path string `json:"path"` // relative to the root, slash-separated
	// StartLine and EndLine are the 1-based lines of the chunk cited; 0
	// when its text was not found in the file (changed since, or a line
	// whose secret was withheld).
	StartLine int `json:"startLine,omitempty"`
	EndLine   int `json:"endLine,omitempty"`
	// URI is the file's file:// URI; "" when the path does not lead to a
	// file inside the root.
	URI string `json:"uri,omitempty"`
}

// Cite turns the File Search chunks of an answer into citations of the
// files under root, in their order, one per file and lines. The Gemini
// API gives a chunk's text but no line numbers: the text is looked up in
// the file as it is now (read through the sandbox, at most maxFileBytes
// of it), whole, else by its first line. Only a path in held (the
// caller's manifest: files the index sent) gets line numbers and a URI: a
// path the API names that the index never sent (a secret file, one
// forbidden or added since) is not read, so that citations tell nothing
// of the files it holds. A file that is not a regular one (a FIFO swapped
// in) is not read either, and opening it does not block.
func Cite(root string, forbidden []string, held map[string]bool, files []backend.FileSource, maxFileBytes int64) []Citation {
	if maxFileBytes <= 0 {
		maxFileBytes = DefaultMaxFileBytes
	}
	sb, err := filectx.NewSandbox(root, forbidden)
	var out []Citation
	seen := map[Citation]bool{}
	for _, f := range files {
		c := Citation{Path: f.Path}
		if err == nil {
			if r, rerr := sb.Resolve(f.Path); rerr == nil && r.Info.Mode().IsRegular() && held[r.Rel] {
				c.Path = r.Rel
				c.URI = (&url.URL{Scheme: "file", Path: r.Path}).String()
				c.StartLine, c.EndLine = lines(r.Path, f.Text, maxFileBytes)
			}
		}
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// lines finds chunk in the file at path and returns its first and last
// lines; 0, 0 when it is not there.
func lines(path, chunk string, max int64) (int, int) {
	chunk = strings.TrimRight(chunk, "\n")
	if strings.TrimSpace(chunk) == "" {
		return 0, 0
	}
	f, err := filectx.OpenRegular(path)
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max))
	if err != nil {
		return 0, 0
	}
	text := string(data)
	n := strings.Count(chunk, "\n")
	i := strings.Index(text, chunk)
	if i < 0 {
		first, _, _ := strings.Cut(chunk, "\n")
		if len(strings.TrimSpace(first)) < 8 {
			return 0, 0
		}
		if i = strings.Index(text, first); i < 0 {
			return 0, 0
		}
		n = 0
	}
	start := strings.Count(text[:i], "\n") + 1
	return start, start + n
}

// Render returns the citations as text, numbered from 1 ("Files:" then
// "[1] path:start-end"), and as resource links to the files.
func Render(cs []Citation) (string, []*mcp.ResourceLink) {
	if len(cs) == 0 {
		return "", nil
	}
	var b strings.Builder
	var links []*mcp.ResourceLink
	b.WriteString("Files:")
	for i, c := range cs {
		name := msg.QuoteName(c.Path)
		switch {
		case c.StartLine == 0:
			fmt.Fprintf(&b, "\n[%d] %s", i+1, name)
		case c.EndLine > c.StartLine:
			fmt.Fprintf(&b, "\n[%d] %s:%d-%d", i+1, name, c.StartLine, c.EndLine)
		default:
			fmt.Fprintf(&b, "\n[%d] %s:%d", i+1, name, c.StartLine)
		}
		if c.URI != "" {
			links = append(links, &mcp.ResourceLink{URI: c.URI, Name: c.Path, MIMEType: "text/plain"})
		}
	}
	return b.String(), links
}

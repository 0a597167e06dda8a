package mcphost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/capio"
)

// The host's bounds on what a downstream server sends. A server is
// someone else's program: broken or hostile, it must not be able to make
// this one hold more than a few times MaxMessageBytes, nor send Gemini
// more than the Gemini CLI would.
const (
	// MaxMessageBytes is the most the host reads of one message from a
	// downstream server (one JSON-RPC message on stdio, one HTTP body or
	// one server-sent event): a larger one ends the connection, which is
	// made again as after any failure.
	MaxMessageBytes = 8 << 20
	// MaxResultChars is how many characters of a tool's text result reach
	// Gemini: the Gemini CLI 0.61.0's DEFAULT_TRUNCATE_TOOL_OUTPUT_THRESHOLD
	// (tools.truncateToolOutputThreshold). A longer text keeps its first
	// fifth and its last four fifths, with the CLI's note between them.
	MaxResultChars = 40_000
	// MaxSchemaBytes bounds a tool's input schema as declared to Gemini,
	// after its references are inlined (a small schema whose $defs refer
	// to each other twice per level doubles at every level). A tool over
	// it is not declared, with the reason shown by `mcp list`.
	MaxSchemaBytes = 64 << 10
	// maxSchemaNodes stops the inlining of a schema early, before it is
	// measured in bytes: every object, array and value counts one.
	maxSchemaNodes = 20_000
	// MaxDescriptionChars bounds a tool's description as declared to
	// Gemini (it goes with every request); a longer one is cut.
	MaxDescriptionChars = 8_000
	// MaxListPages and MaxServerTools bound one server's tools/list: a
	// server that pages further, or lists more tools, fails.
	MaxListPages   = 100
	MaxServerTools = 512
)

// errTooLarge is the error of a message over MaxMessageBytes.
var errTooLarge = fmt.Errorf("the server sent a message larger than %d bytes (%d MiB), this host's limit for one message", MaxMessageBytes, MaxMessageBytes>>20)

// limitBody caps the body of every HTTP response that is not an event
// stream: reading past the cap fails with errTooLarge. The SDK bounds each
// event of an event stream by MaxEventSize (set to MaxMessageBytes) and
// fails the connection on a larger one; eventWatch sees that coming. In
// both cases overflow records it, for the error of the call that waited.
func limitBody(res *http.Response, overflow *atomic.Bool) {
	if res == nil || res.Body == nil {
		return
	}
	if mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type")); mt == "text/event-stream" {
		res.Body = &eventWatch{rc: res.Body, lineBlank: true, overflow: overflow}
		return
	}
	res.Body = capio.NewReadCloser(res.Body, MaxMessageBytes, func() error {
		overflow.Store(true)
		return errTooLarge
	})
}

// eventWatch counts the bytes of each server-sent event as the SDK does
// (every line up to the blank one that ends the event) and sets overflow
// when one is over MaxMessageBytes, where the SDK stops reading.
type eventWatch struct {
	rc        io.ReadCloser
	event     int64 // bytes of the event so far
	lineBlank bool  // the line so far holds nothing but "\r"
	overflow  *atomic.Bool
}

func (e *eventWatch) Read(p []byte) (int, error) {
	n, err := e.rc.Read(p)
	for _, c := range p[:n] {
		e.event++
		switch c {
		case '\n':
			if e.lineBlank {
				e.event = 0
			}
			e.lineBlank = true
		case '\r':
		default:
			e.lineBlank = false
		}
		if e.event > MaxMessageBytes {
			e.overflow.Store(true)
		}
	}
	return n, err
}

func (e *eventWatch) Close() error { return e.rc.Close() }

// lineLimitReader fails a stdio server's output once one line (one
// JSON-RPC message) grows past MaxMessageBytes: the SDK's decoder would
// otherwise buffer it whole.
type lineLimitReader struct {
	r        io.Reader
	line     int64
	overflow *atomic.Bool
}

func (l *lineLimitReader) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for i := 0; i < n; {
		j := bytes.IndexByte(p[i:n], '\n')
		if j < 0 {
			l.line += int64(n - i)
			break
		}
		l.line = 0
		i += j + 1
	}
	if l.line > MaxMessageBytes {
		l.overflow.Store(true)
		return 0, errTooLarge
	}
	return n, err
}

// callError explains a failed call: one whose connection broke on a
// message over the cap says so, rather than the SDK's "connection closed".
func callError(err error, overflow bool) error {
	if overflow && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("%w (%v)", errTooLarge, err) //nolint:errorlint // the call failed for the overflow; the cut pipe's own error is told, not wrapped
	}
	return err
}

// truncateOutput cuts text longer than maxChars characters as the Gemini
// CLI 0.61.0 does (formatTruncatedToolOutput): its first fifth and last
// four fifths, with a note of what was left out. The CLI also names a file
// holding the whole output; this host keeps none.
func truncateOutput(text string, maxChars int) string {
	if maxChars <= 0 || utf8.RuneCountInString(text) <= maxChars {
		return text
	}
	head := maxChars / 5
	tail := maxChars - head
	runes := []rune(text)
	omitted := len(runes) - head - tail
	return fmt.Sprintf("Output too large. Showing first %s and last %s characters.\n%s\n\n... [%s characters omitted] ...\n\n%s",
		thousands(head), thousands(tail), string(runes[:head]), thousands(omitted), string(runes[len(runes)-tail:]))
}

// thousands writes n with commas, as JavaScript's toLocaleString does in
// English.
func thousands(n int) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// limitResult cuts the text of a tool's result to MaxResultChars, as the
// CLI cuts the text it sends Gemini: when the text blocks together are
// longer, they become one text block, cut, in the place of the first. An
// embedded resource's text is cut alone. structuredContent and _meta,
// which Gemini reads only in a failed result's report, are dropped when
// they are longer. Binary blocks are bounded by MaxMessageBytes already.
func limitResult(res *mcp.CallToolResult) {
	if res == nil {
		return
	}
	total := 0
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			total += utf8.RuneCountInString(c.Text)
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				c.Resource.Text = truncateOutput(c.Resource.Text, MaxResultChars)
			}
		}
	}
	if res.StructuredContent != nil && jsonSize(res.StructuredContent) > MaxResultChars {
		res.StructuredContent = nil
	}
	if res.Meta != nil && jsonSize(res.Meta) > MaxResultChars {
		res.Meta = nil
	}
	if total <= MaxResultChars {
		return
	}
	var joined []string
	out := res.Content[:0:0]
	first := -1
	for _, c := range res.Content {
		t, ok := c.(*mcp.TextContent)
		if !ok {
			out = append(out, c)
			continue
		}
		joined = append(joined, t.Text)
		if first < 0 {
			first = len(out)
			out = append(out, nil)
		}
	}
	out[first] = &mcp.TextContent{Text: truncateOutput(strings.Join(joined, "\n"), MaxResultChars)}
	res.Content = out
}

// jsonSize is the length of v in JSON, or more than any bound when it
// cannot be written.
func jsonSize(v any) int {
	data, err := json.Marshal(v)
	if err != nil {
		return math.MaxInt
	}
	return len(data)
}

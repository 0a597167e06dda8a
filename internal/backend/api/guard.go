package api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/capio"
)

// Bounds on what the Gemini API, or whatever answers at its address, may
// send. Every byte that comes in is counted before the SDK reads it, so
// that a broken or hostile peer costs a bounded amount of memory and time.
const (
	// MaxFrameBytes is the largest server-sent event of a streamed answer.
	// The API streams text in events of a few KB; the largest legitimate
	// ones carry a function call with long arguments (a file to write) or
	// inline data (an image model's picture, a few MB in base64, up to
	// maxImageFrameBytes on a turn that asks for images). A longer event
	// ends the call before the SDK, which would hold it whole and then
	// decode it several times over, has read it.
	MaxFrameBytes = 8 << 20
	// maxImageFrameBytes is the largest event of a turn that asks an
	// image model for images (a 4K picture in base64); the turn's byte
	// budget (--max-output-bytes) bounds it too.
	maxImageFrameBytes = 48 << 20
	// maxBodyBytes bounds an answer that is not streamed: a page of the
	// model list, a token count, an error.
	maxBodyBytes = 8 << 20
	// maxHeaderBytes bounds the headers of an answer (with an API key;
	// for Vertex AI with Application Default Credentials the SDK's
	// transport keeps Go's default, 10 MiB).
	maxHeaderBytes = 256 << 10
	// MaxCallsPerAnswer bounds the function calls of one answer (Gemini's
	// parallel calls are a handful).
	MaxCallsPerAnswer = 64
	// MaxCallsPerTurn bounds the function calls of all the rounds of one
	// turn.
	MaxCallsPerTurn = 256
	// maxPartsPerAnswer bounds the parts of any kind of one answer (each
	// event carries one or a few).
	maxPartsPerAnswer = 1 << 16
)

// streamPath is how the path of a streamed generateContent request ends.
const streamPath = ":streamGenerateContent"

// guardTransport bounds the answers of base: a streamed answer's events
// by MaxFrameBytes each and by the turn's byte budget (see withBudget) in
// all, any other answer by maxBodyBytes.
type guardTransport struct{ base http.RoundTripper }

func (g guardTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := g.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	if resp.StatusCode >= 200 && resp.StatusCode <= 299 && strings.HasSuffix(req.URL.Path, streamPath) {
		resp.Body = &sseBody{rc: resp.Body, ctx: req.Context(), budget: budgetOf(req.Context())}
	} else {
		resp.Body = capio.NewReadCloser(resp.Body, maxBodyBytes, func() error {
			return newError(backend.KindBadOutput, nil, "an answer of the Gemini API was longer than %d MiB, "+
				"this server's cap, and was not read", maxBodyBytes>>20)
		})
	}
	return resp, nil
}

// guardClient makes hc's transport a guardTransport.
func guardClient(hc *http.Client) {
	if hc == nil {
		return
	}
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc.Transport = guardTransport{base: base}
}

// budget is the bytes one turn may stream from the API, over all its
// requests.
type budget struct {
	limit int64
	used  atomic.Int64
	frame int // the largest event; 0 for MaxFrameBytes
}

type budgetKey struct{}

// withBudget gives the requests made with ctx a budget of limit bytes.
func withBudget(ctx context.Context, limit int) context.Context {
	return context.WithValue(ctx, budgetKey{}, &budget{limit: int64(limit)})
}

func budgetOf(ctx context.Context) *budget {
	b, _ := ctx.Value(budgetKey{}).(*budget)
	return b
}

func tooBig(limit int64) *backend.Error {
	return newError(backend.KindOutputTooBig, nil, "the answer grew past %d bytes, this server's cap "+
		"(--max-output-bytes, counting every part of the answer as streamed), and was stopped; ask for a shorter answer", limit)
}

// sseBody reads a stream of server-sent events, passing them on one by
// one, each ended by a blank line ("\n\n"), as the SDK splits them: an
// event longer than MaxFrameBytes, or a stream past its budget, is an
// error instead, and the rest is not read.
type sseBody struct {
	rc     io.ReadCloser
	ctx    context.Context
	budget *budget // nil: none
	buf    [32 << 10]byte
	frame  []byte // the event being read
	out    []byte // whole events, not read yet
	err    error
}

func (s *sseBody) Read(p []byte) (int, error) {
	for len(s.out) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		s.fill()
	}
	n := copy(p, s.out)
	s.out = s.out[n:]
	return n, nil
}

// fill reads what comes next, moving the events it ends to s.out.
func (s *sseBody) fill() {
	if err := s.ctx.Err(); err != nil {
		s.err = err
		return
	}
	n, err := s.rc.Read(s.buf[:])
	if s.budget != nil && s.budget.used.Add(int64(n)) > s.budget.limit {
		s.err = tooBig(s.budget.limit)
		return
	}
	s.out = s.out[:0]
	for data := s.buf[:n]; len(data) > 0; {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			s.frame = append(s.frame, data...)
			break
		}
		s.frame = append(s.frame, data[:i+1]...)
		data = data[i+1:]
		var event []byte
		switch f := s.frame; {
		case bytes.HasSuffix(f, []byte("\r\n\r\n")):
			event = f[:len(f)-4]
		case bytes.HasSuffix(f, []byte("\n\n")):
			event = f[:len(f)-2]
		default:
			continue
		}
		s.out = append(append(s.out, event...), '\n', '\n')
		s.frame = s.frame[:0]
	}
	if maxFrame := s.maxFrame(); len(s.frame) > maxFrame {
		s.out, s.frame = s.out[:0], nil
		s.err = newError(backend.KindOutputTooBig, nil, "the Gemini API sent one event of its stream larger than "+
			"%d MiB, this server's cap on one event, and the call was stopped; try again", maxFrame>>20)
		return
	}
	if err != nil {
		if err == io.EOF {
			// A last event without its blank line: the SDK reads it too.
			s.out = append(s.out, s.frame...)
			s.frame = nil
		}
		s.err = err
	}
}

func (s *sseBody) Close() error { return s.rc.Close() }

// maxFrame is the largest event s passes on.
func (s *sseBody) maxFrame() int {
	if s.budget != nil && s.budget.frame > 0 {
		return s.budget.frame
	}
	return MaxFrameBytes
}

// sdkPanic is the error for a panic of the SDK on what the API sent.
func sdkPanic(v any) *backend.Error {
	return newError(backend.KindBadOutput, fmt.Errorf("genai panic: %v", v), "the Gemini API's answer could not be "+
		"read: the Go SDK failed on it (%v); nothing was recorded; try again", v)
}

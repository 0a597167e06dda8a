package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// MaxBatch is the most messages a JSON-RPC batch may hold. Only clients
// of protocol versions before 2025-06-18 may send batches, and every call
// in one starts at once: 38,000 calls in one POST took a GiB.
const MaxBatch = 64

// closeUntilAccepted marks every answer "Connection: close" until
// readBody, which runs once the guard has accepted the request, lifts the
// mark. Without it, net/http keeps reading the body of a refused request
// (to reuse the connection) before it sends the refusal, so a request
// whose body never comes was never told 401.
func closeUntilAccepted(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		next.ServeHTTP(w, r)
	})
}

// closeUnread closes, once its answer is out, the connection of every
// request whose body was not read to its end: refused ones, and those to
// paths that take no body (/healthz). net/http would otherwise read up to
// 256 KiB of what is left, to reuse the connection, before it sends the
// answer or, after a "Connection: close" one, before it closes: a body that
// never comes held the connection, and its file, for good. With the read
// deadline in the past, that read fails at once (unless the rest of the
// body has already arrived: then the connection is kept), and net/http
// closes the connection.
func closeUnread(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		body := &eofReader{ReadCloser: r.Body}
		r.Body = body
		next.ServeHTTP(w, r)
		if !body.eof {
			http.NewResponseController(w).SetReadDeadline(time.Now())
		}
	})
}

// eofReader records whether its reader reached its end.
type eofReader struct {
	io.ReadCloser
	eof bool
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.ReadCloser.Read(p)
	if err == io.EOF {
		e.eof = true
	}
	return n, err
}

// readBody reads an accepted request's body within timeout and up to
// maxBytes, then hands it on from memory, with every tool call argument
// over maxPrompt bytes in it replaced by the marker of its size (see
// shrinkOversized). The deadline is set only while
// the body is read and cleared afterwards, so that the long-lived answers
// (SSE streams) that follow are not cut, as http.Server.ReadTimeout would.
func readBody(next http.Handler, timeout time.Duration, maxBytes int64, maxPrompt int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Del("Connection")
		if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		rc := http.NewResponseController(w)
		rc.SetReadDeadline(time.Now().Add(timeout))
		var src io.Reader = r.Body
		if maxBytes > 0 {
			src = http.MaxBytesReader(w, r.Body, maxBytes)
		}
		body, err := readAll(src, r.ContentLength, maxBytes)
		rc.SetReadDeadline(time.Time{})
		if err != nil {
			var tooBig *http.MaxBytesError
			var timedOut interface{ Timeout() bool }
			switch {
			case errors.As(err, &tooBig):
				http.Error(w, fmt.Sprintf("request body exceeds %d bytes (--max-body-bytes)", tooBig.Limit), http.StatusRequestEntityTooLarge)
			case errors.As(err, &timedOut) && timedOut.Timeout():
				w.Header().Set("Connection", "close")
				http.Error(w, fmt.Sprintf("the request body did not arrive within %v", timeout), http.StatusRequestTimeout)
			default:
				w.Header().Set("Connection", "close")
				http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
			}
			return
		}
		if n := batchLen(body); n > MaxBatch {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{
				"code":    -32600,
				"message": fmt.Sprintf("a JSON-RPC batch may hold at most %d messages, this one holds %d: send smaller batches or one message per request", MaxBatch, n),
			}})
			return
		}
		body, _ = shrinkOversized(body, maxPrompt)
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// bodyBlock is the size of the blocks readAll reads a body of unknown
// length in.
const bodyBlock = 64 << 10

// readAll reads r to its end, holding no more than its bytes and one
// block: a body of known length (at most maxBytes, when maxBytes > 0) is
// read into a slice of that size, one of unknown length (chunked) into
// blocks joined once at its end. io.ReadAll's doubling, and the garbage it
// leaves, took 2.5 times --max-body-bytes for a body over it.
func readAll(r io.Reader, length, maxBytes int64) ([]byte, error) {
	if maxBytes > 0 && length > maxBytes {
		return nil, &http.MaxBytesError{Limit: maxBytes}
	}
	if length > 0 {
		// The request's body reader fails on a body shorter than its
		// Content-Length.
		body := make([]byte, length)
		if _, err := io.ReadFull(r, body); err != nil {
			return nil, err
		}
		// Reading its end marks the body read (see closeUnread).
		if n, err := r.Read(make([]byte, 1)); n > 0 {
			return nil, errors.New("the body is longer than its Content-Length")
		} else if err != io.EOF {
			return nil, err
		}
		return body, nil
	}
	var blocks [][]byte
	total := 0
	block := make([]byte, bodyBlock)
	for n := 0; ; {
		m, err := r.Read(block[n:])
		n += m
		total += m
		if n == len(block) || (err != nil && n > 0) {
			blocks = append(blocks, block[:n])
			block, n = make([]byte, bodyBlock), 0
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if len(blocks) == 1 {
		return blocks[0], nil
	}
	body := make([]byte, 0, total)
	for _, b := range blocks {
		body = append(body, b...)
	}
	return body, nil
}

// batchLen returns the number of messages in body if it is a JSON array
// (a batch), else 0; what is not valid JSON is left to the SDK to refuse.
func batchLen(body []byte) int {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '[' {
		return 0
	}
	var msgs []json.RawMessage
	if json.Unmarshal(trimmed, &msgs) != nil {
		return 0
	}
	return len(msgs)
}

package server

import (
	"bytes"
	"io"
	"runtime"
	"strings"
	"testing"
)

// TestLineFilterBoundsMemory feeds a 64 MiB line to a filter limited to
// 1 MiB: the line is answered with an error that names its id, the next
// line passes, and reading it allocated a small multiple of the limit, not
// the line.
func TestLineFilterBoundsMemory(t *testing.T) {
	const limit = 1 << 20
	huge := io.MultiReader(
		strings.NewReader(`{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"prompt":"`),
		io.LimitReader(repeatReader('x'), 64<<20),
		strings.NewReader("\"}}\n"+`{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n"),
	)
	var out bytes.Buffer
	f := newLineFilter(huge, &out, limit)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	passed, err := io.ReadAll(f)
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(passed), `{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n"; got != want {
		t.Errorf("passed on %q, want %q", got, want)
	}
	if !strings.Contains(out.String(), `"id":"big","error":{"code":-32600`) {
		t.Errorf("answered %q", out.String())
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*limit {
		t.Errorf("reading allocated %d bytes for a limit of %d", alloc, limit)
	}
}

type repeatReader byte

func (r repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// TestCheckMessagePassesValid: what the SDK handles itself, including
// its own errors for unknown methods and bad params, goes through.
func TestCheckMessagePassesValid(t *testing.T) {
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"a","method":"nosuch","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":3,"result":{}}`,
		`{"jsonrpc":"2.0","id":4,"error":{"code":-1,"message":"no"}}`,
		`{"jsonrpc":"2.0","id":9223372036854775807,"method":"ping"}`,
	} {
		if resp := checkMessage([]byte(m)); resp != nil {
			t.Errorf("%s refused: %s", m, resp)
		}
	}
}

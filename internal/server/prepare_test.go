package server

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPrepareOnConnect: the backend is told to get ready after a
// handshake is answered (initialize, or server/discover of the stateless
// protocol), not on other methods, and not after a refused handshake.
func TestPrepareOnConnect(t *testing.T) {
	t.Parallel()
	var order []string
	prepare := func() { order = append(order, "prepare") }
	for _, c := range []struct {
		method string
		err    error
		want   bool
	}{
		{"initialize", nil, true},
		{"server/discover", nil, true},
		{"initialize", errors.New("unsupported protocol version"), false},
		{"tools/list", nil, false},
		{"tools/call", nil, false},
		{"notifications/initialized", nil, false},
	} {
		order = nil
		h := prepareOnConnect(prepare)(func(context.Context, string, mcp.Request) (mcp.Result, error) {
			order = append(order, "answer")
			return nil, c.err
		})
		if _, err := h(context.Background(), c.method, nil); err != c.err {
			t.Fatalf("%s: %v", c.method, err)
		}
		want := []string{"answer"}
		if c.want {
			want = append(want, "prepare")
		}
		if len(order) != len(want) || order[len(order)-1] != want[len(want)-1] {
			t.Errorf("%s (err %v): %v, want %v", c.method, c.err, order, want)
		}
	}
}

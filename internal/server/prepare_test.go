package server

import (
	"context"
	"errors"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestPrepareOnConnect: the backend is told to get ready once a client's
// tools/list is answered, not on the handshake or a ping (what a health
// check sends), nor after a tools/list that failed.
func TestPrepareOnConnect(t *testing.T) {
	t.Parallel()
	var order []string
	prepare := func() { order = append(order, "prepare") }
	for _, c := range []struct {
		method string
		err    error
		want   bool
	}{
		{"tools/list", nil, true},
		{"tools/list", errors.New("rate limited"), false},
		{"initialize", nil, false},
		{"server/discover", nil, false},
		{"ping", nil, false},
		{"tools/call", nil, false},
		{"notifications/initialized", nil, false},
	} {
		order = nil
		h := prepareOnConnect(prepare)(func(context.Context, string, mcp.Request) (mcp.Result, error) {
			order = append(order, "answer")
			return nil, c.err
		})
		if _, err := h(context.Background(), c.method, nil); !errors.Is(err, c.err) {
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

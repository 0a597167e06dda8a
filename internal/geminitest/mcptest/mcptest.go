// Package mcptest connects an MCP client to an *mcp.Server in memory, for
// tests that drive a server's tools and resources exactly as a client does
// (the SDK's schema validation and the server's middleware included) with
// no process and no network.
package mcptest

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options are what a test may change about the client; the zero value is
// a plain client named "test-client".
type Options struct {
	// Client names the client to the server (default test-client, version 1).
	Client *mcp.Implementation
	// ClientOptions are the client's options (handlers, capabilities).
	ClientOptions *mcp.ClientOptions
	// Session are the options of the client's session (a protocol version).
	Session *mcp.ClientSessionOptions
}

// Connect connects srv to a new client over in-memory transports and
// returns the client's session. When the test ends, the client's session is
// closed and the server's session waited for, so that no handler outlives
// the test. opts may be nil.
func Connect(tb testing.TB, srv *mcp.Server, opts *Options) *mcp.ClientSession {
	tb.Helper()
	if opts == nil {
		opts = &Options{}
	}
	impl := opts.Client
	if impl == nil {
		impl = &mcp.Implementation{Name: "test-client", Version: "1"}
	}
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		tb.Fatalf("mcptest: server connect: %v", err)
	}
	cs, err := mcp.NewClient(impl, opts.ClientOptions).Connect(ctx, ct, opts.Session)
	if err != nil {
		ss.Close()
		tb.Fatalf("mcptest: client connect: %v", err)
	}
	tb.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

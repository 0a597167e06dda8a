package identity

import (
	"context"
	"testing"
)

func TestOf(t *testing.T) {
	t.Parallel()
	if k := Of(With(context.Background(), "token:abc")); k != "token:abc" {
		t.Errorf("with a token: %q", k)
	}
	if k := Of(context.Background()); k != "local" {
		t.Errorf("without a caller: %q", k)
	}
}

// TestCallers: each kind of caller says who it is, and gives back its
// token only if it has one; Who's key names a token, else an MCP session.
func TestCallers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		caller, token, describe string
	}{
		{ForToken("abc"), "abc", "every client that uses this client's bearer token"},
		{ForAddr("192.0.2.1"), "", "every client connecting from 192.0.2.1"},
		{Local, "", "this client"},
	} {
		if got := TokenOf(c.caller); got != c.token {
			t.Errorf("TokenOf(%q) = %q, want %q", c.caller, got, c.token)
		}
		if got := Describe(c.caller); got != c.describe {
			t.Errorf("Describe(%q) = %q, want %q", c.caller, got, c.describe)
		}
	}
	for w, want := range map[Who]string{
		{Caller: ForToken("abc"), Token: "abc", MCPSession: "s1"}: "token:abc",
		{Caller: ForAddr("192.0.2.1"), MCPSession: "s1"}:          "mcp:s1",
		{Caller: Local}: "",
	} {
		if got := w.Key(); got != want {
			t.Errorf("%+v.Key() = %q, want %q", w, got, want)
		}
	}
}

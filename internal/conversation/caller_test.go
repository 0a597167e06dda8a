package conversation

import (
	"context"
	"errors"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/identity"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/access"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// TestCallOfNamesTheToken: over HTTP, a call's token is its caller's,
// whatever transport carried it (the request's context is the one
// source); on stdio, and over HTTP without tokens, it has none.
func TestCallOfNamesTheToken(t *testing.T) {
	t.Parallel()
	store := memstore.New(session.Options{})
	t.Cleanup(func() { _ = store.Close() })
	remote := New(Options{Backend: &scripted{}, Store: store, Remote: true, Authenticated: true})
	local := New(Options{Backend: &scripted{}, Store: store})
	alice := identity.With(context.Background(), identity.ForToken("alice"))
	for _, tc := range []struct {
		d           *Service
		ctx         context.Context
		token, key  string
		description string
	}{
		{remote, alice, "alice", "token:alice", "HTTP with a token"},
		{remote, identity.With(context.Background(), "addr:192.0.2.1"), "", "", "HTTP without tokens"},
		{local, alice, "", "", "stdio"},
	} {
		w := tc.d.CallOf(tc.ctx, nil).Who
		if w.Token != tc.token || w.Key() != tc.key {
			t.Errorf("%s: token %q key %q, want %q and %q", tc.description, w.Token, w.Key(), tc.token, tc.key)
		}
	}
}

// TestNoOwnerlessSessionWithTokens: over HTTP with tokens, a call that
// names no token (a transport that lost its caller) is refused before
// anything runs: it neither starts a session that would have no owner,
// nor lists or continues the sessions that have none.
func TestNoOwnerlessSessionWithTokens(t *testing.T) {
	t.Parallel()
	store := memstore.New(session.Options{})
	t.Cleanup(func() { _ = store.Close() })
	b := &scripted{answer: &backend.Answer{SessionID: session.NewUUID(), Text: "hi"}}
	d := New(Options{Backend: b, Store: store, DefaultCwd: t.TempDir(), Remote: true, Authenticated: true})
	lost := d.CallOf(context.Background(), nil)
	if _, _, err := d.run(context.Background(), lost, backend.Turn{Prompt: "p", Dir: t.TempDir()}, "p"); !errors.Is(err, access.ErrUnidentified) {
		t.Errorf("a turn without a token: %v, want refused", err)
	}
	if b.runs != 0 {
		t.Errorf("the backend ran %d times", b.runs)
	}
	if _, _, err := d.Sessions(context.Background(), lost.Who, "", 0, 10); !errors.Is(err, access.ErrUnidentified) {
		t.Errorf("a list without a token: %v, want refused", err)
	}
	if _, err := d.acc.Target(context.Background(), "", "", lost.Who); !errors.Is(err, access.ErrUnidentified) {
		t.Errorf("a reply without a token: %v, want refused", err)
	}
	alice := d.CallOf(identity.With(context.Background(), identity.ForToken("alice")), nil)
	if _, _, err := d.run(context.Background(), alice, backend.Turn{Prompt: "p", Dir: t.TempDir()}, "p"); err != nil {
		t.Fatalf("a turn with a token: %v", err)
	}
	recs, _, err := d.Sessions(context.Background(), alice.Who, "", 0, 10)
	if err != nil || len(recs) != 1 || recs[0].Owner != "alice" {
		t.Errorf("alice's sessions: %v %+v, want one she owns", err, recs)
	}
}

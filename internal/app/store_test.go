package app

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

func parseStore(t *testing.T, args ...string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("test", "", append([]string{"--state-dir", t.TempDir()}, args...), func(string) string { return "" }, io.Discard, configRules())
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestOpenStore(t *testing.T) {
	ctx := context.Background()
	st, where, err := openStore(ctx, parseStore(t, "--store", "memory:"), false, session.OpeningHooks{})
	if err != nil || where != "memory:" {
		t.Fatalf("memory: %v %q", err, where)
	}
	if _, ok := st.(*memstore.Store); !ok {
		t.Fatalf("memory: opened a %T", st)
	}
	st.Close()
	// The default is the embedded store in the state directory.
	cfg := parseStore(t)
	st, where, err = openStore(ctx, cfg, false, session.OpeningHooks{})
	if err != nil || where != "sqlite:"+cfg.Store.StateDir+"/sessions.db" {
		t.Fatalf("default: %v %q", err, where)
	}
	st.Close()
	for _, tc := range []struct{ store, want, not string }{
		{"mongodb://db:27017", `this server has no "mongodb" store; it supports `, ""},
		{"nosuch://user:secret@host:1", "nosuch://user:xxxxx@host:1", "secret"},
		{"memory:extra", "the memory store takes nothing after memory:", ""},
		{"sqlite:", "names no file: use sqlite:PATH", ""},
	} {
		_, _, err := openStore(ctx, parseStore(t, "--store", tc.store), false, session.OpeningHooks{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || tc.not != "" && strings.Contains(err.Error(), tc.not) {
			t.Errorf("--store %s: %v, want %q", tc.store, err, tc.want)
		}
	}
	_, _, err = openStore(ctx, parseStore(t, "--store", "mongodb://db"), false, session.OpeningHooks{})
	for _, kind := range []string{"memory:", "sqlite:"} {
		if !strings.Contains(err.Error(), kind) {
			t.Errorf("the unknown kind's error does not name %s: %v", kind, err)
		}
	}
}

package config

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestStoreFlags(t *testing.T) {
	c, err := Parse("x", "", nil, envOf(nil), io.Discard, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Store.URL != "" || c.Store.Prefix != DefaultStorePrefix || c.Store.TTL != 168*time.Hour || c.Store.MaxTurns != 200 {
		t.Fatalf("defaults: store %q prefix %q ttl %v max turns %d", c.Store.URL, c.Store.Prefix, c.Store.TTL, c.Store.MaxTurns)
	}
	env := envOf(map[string]string{"GEMINI_MCP_STORE": "memory:", "GEMINI_MCP_STORE_PREFIX": "team-a:", "GEMINI_MCP_SESSION_TTL": "24h", "GEMINI_MCP_MAX_TURNS": "50"})
	if c, err = Parse("x", "", nil, env, io.Discard, Rules{}); err != nil {
		t.Fatal(err)
	}
	if c.Store.URL != "memory:" || c.Store.Prefix != "team-a:" || c.Store.TTL != 24*time.Hour || c.Store.MaxTurns != 50 {
		t.Fatalf("from env: %q %q %v %d", c.Store.URL, c.Store.Prefix, c.Store.TTL, c.Store.MaxTurns)
	}
	if c, err = Parse("x", "", []string{"--store", "redis://127.0.0.1:6379/0", "--max-turns", "3"}, env, io.Discard, Rules{}); err != nil {
		t.Fatal(err)
	}
	if c.Store.URL != "redis://127.0.0.1:6379/0" || c.Store.MaxTurns != 3 {
		t.Fatalf("flags over env: %q %d", c.Store.URL, c.Store.MaxTurns)
	}
}

func TestStoreFlagsInvalid(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--store", "/var/lib/sessions.db"}, "use sqlite:PATH, memory:, redis://HOST:PORT/DB, redis+cluster://"},
		{[]string{"--store-prefix", "a b"}, "--store-prefix"},
		{[]string{"--session-ttl", "0"}, "--session-ttl must be at least 1m"},
		{[]string{"--session-ttl", "10s"}, "--session-ttl must be at least 1m"},
		{[]string{"--max-turns", "0"}, "--max-turns must be at least 1"},
	} {
		_, err := Parse("x", "", tc.args, envOf(nil), io.Discard, Rules{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
	if _, err := Parse("x", "", nil, envOf(map[string]string{"GEMINI_MCP_MAX_TURNS": "many"}), io.Discard, Rules{}); err == nil || !strings.Contains(err.Error(), "GEMINI_MCP_MAX_TURNS") {
		t.Errorf("GEMINI_MCP_MAX_TURNS=many: %v", err)
	}
}

package app

import (
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
)

func TestNestDepth(t *testing.T) {
	for _, c := range []struct {
		mark      string
		allow     bool
		http      bool
		depth     int
		child     string
		serveNone bool
	}{
		{"", false, false, 0, NestedEnv + "=1", false},
		{"1", false, false, 1, NestedEnv + "=2", true},
		{"1", true, false, 1, NestedEnv + "=2", false},
		{"yes", true, false, 1, NestedEnv + "=2", false},
		{"2", true, false, 2, NestedEnv + "=3", true},
		{"2", true, true, 2, NestedEnv + "=3", false},
	} {
		getenv := func(k string) string {
			if k == NestedEnv {
				return c.mark
			}
			return ""
		}
		cfg := &config.Config{CLI: config.CLI{AllowNested: c.allow}}
		if c.http {
			cfg.HTTP.Addr = "127.0.0.1:0"
		}
		if d, child, none := nestDepth(getenv), childNestEnv(getenv), isNested(cfg, getenv); d != c.depth || child != c.child || none != c.serveNone {
			t.Errorf("mark %q allow %v http %v: depth %d child %q nested %v", c.mark, c.allow, c.http, d, child, none)
		}
	}
}

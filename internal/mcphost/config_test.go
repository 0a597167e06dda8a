package mcphost

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

func TestParseConfigSettingsFile(t *testing.T) {
	// A whole Gemini CLI settings.json: other keys and comments are fine.
	data := `{
  // The CLI's own settings.
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "mcpServers": {
    "zeta": {"command": "$HOME/bin/db", "args": ["--dsn", "${DSN}", "$MISSING"], "env": {"TOKEN": "$SECRET", "GONE": "x$MISSING", "D": "${MISSING:-fallback}"}, "cwd": "/tmp", "timeout": 1500, "trust": true, "includeTools": ["query(sql)", "list"], "excludeTools": ["drop"]},
    "alpha": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer ${SECRET}"}, "description": "remote /* not a comment */"},
    "beta": {"url": "http://127.0.0.1:9/sse", "type": "sse"},
    "gamma": {"httpUrl": "https://example.test/mcp", "includeTools": []}
  }
}`
	cfg, err := ParseConfig([]byte(data), env(map[string]string{"HOME": "/home/u", "DSN": "pg://x", "SECRET": "s3"}))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range cfg.Servers {
		names = append(names, s.Name)
	}
	if want := []string{"zeta", "alpha", "beta", "gamma"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("servers %v, want the file's order %v", names, want)
	}
	z := cfg.Servers[0]
	if z.Command != "/home/u/bin/db" || !reflect.DeepEqual(z.Args, []string{"--dsn", "pg://x", "$MISSING"}) {
		t.Errorf("command %q args %q: $VAR expanded, unknown kept as written", z.Command, z.Args)
	}
	if want := map[string]string{"TOKEN": "s3", "GONE": "x", "D": "fallback"}; !reflect.DeepEqual(z.Env, want) {
		t.Errorf("env %v, want %v (unknown variables empty in env, as dotenv-expand does)", z.Env, want)
	}
	if z.Timeout != 1500*time.Millisecond || !z.Trust || z.Cwd != "/tmp" || z.Transport() != TransportStdio || z.CallTimeout() != 1500*time.Millisecond {
		t.Errorf("zeta: %+v", z)
	}
	if !reflect.DeepEqual(z.IncludeTools, []string{"query(sql)", "list"}) || !reflect.DeepEqual(z.ExcludeTools, []string{"drop"}) {
		t.Errorf("include %q exclude %q", z.IncludeTools, z.ExcludeTools)
	}
	a := cfg.Servers[1]
	if a.Transport() != TransportHTTP || !a.SSEFallback() || a.Headers["Authorization"] != "Bearer s3" || a.Description != "remote /* not a comment */" || a.CallTimeout() != DefaultTimeout {
		t.Errorf("alpha: %+v", a)
	}
	if b := cfg.Servers[2]; b.Transport() != TransportSSE || b.SSEFallback() {
		t.Errorf("beta: %+v", b)
	}
	if g := cfg.Servers[3]; g.Transport() != TransportHTTP || g.SSEFallback() || g.IncludeTools == nil || len(g.IncludeTools) != 0 {
		t.Errorf("gamma: %+v (an empty includeTools must stay empty, not nil)", g)
	}
}

func TestParseConfigMCPServersAlone(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"mcpServers":{"db":{"command":"db","tcp":"x:1"},"web":{"url":"http://127.0.0.1:1/","httpUrl":"http://127.0.0.1:2/"}}}`), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Servers) != 2 || cfg.Servers[1].Endpoint() != "http://127.0.0.1:2/" {
		t.Fatalf("%+v", cfg.Servers)
	}
	joined := strings.Join(cfg.Warnings, "\n")
	if !strings.Contains(joined, "mcpServers.db.tcp: ignored") || !strings.Contains(joined, "mcpServers.web: both httpUrl and url") {
		t.Errorf("warnings %q", cfg.Warnings)
	}
}

func TestParseConfigErrors(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{`[]`, "not a JSON object"},
		{`{"general":{}}`, `no "mcpServers" object`},
		{`{"mcpServers":[]}`, "mcpServers: must be an object"},
		{`{"mcpServers":{"db":"x"}}`, "mcpServers.db: must be an object"},
		{`{"mcpServers":{"db":{}}}`, "mcpServers.db: needs command"},
		{`{"mcpServers":{"db":{"command":"x","timeout":0}}}`, "mcpServers.db.timeout: must be a positive number of milliseconds"},
		{`{"mcpServers":{"db":{"command":"x","timeout":"10s"}}}`, "mcpServers.db.timeout: must be a positive number of milliseconds"},
		{`{"mcpServers":{"db":{"command":"x","timeout":-5}}}`, "mcpServers.db.timeout: must be a positive"},
		{`{"mcpServers":{"db":{"command":"x","args":"a b"}}}`, "mcpServers.db.args: must be an array of strings"},
		{`{"mcpServers":{"db":{"command":"x","env":{"A":1}}}}`, "mcpServers.db.env: must be an object of strings"},
		{`{"mcpServers":{"db":{"command":"x","trust":"yes"}}}`, "mcpServers.db.trust: must be true or false"},
		{`{"mcpServers":{"db":{"command":"x","comand":"y"}}}`, "mcpServers.db.comand: unknown setting"},
		{`{"mcpServers":{"db":{"url":"ftp://h/x"}}}`, "mcpServers.db.url: must be an http:// or https:// URL"},
		{`{"mcpServers":{"db":{"url":"http://h/x","type":"ws"}}}`, `mcpServers.db.type: must be "http"`},
		{`{"mcpServers":{"":{"command":"x"}}}`, "a server name must not be empty"},
	} {
		_, err := ParseConfig([]byte(tc.data), env(nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.data, err, tc.want)
		}
	}
}

func TestLoadConfigNamesTheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mcp.json")
	if err := os.WriteFile(path, []byte(`{"mcpServers":{"db":{"command":"x","timeout":0}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadConfig(path, os.LookupEnv)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "mcpServers.db.timeout") {
		t.Fatalf("error %v", err)
	}
	if _, err := LoadConfig(filepath.Join(t.TempDir(), "none.json"), os.LookupEnv); err == nil {
		t.Fatal("a missing file must be an error")
	}
}

func TestExpand(t *testing.T) {
	lookup := env(map[string]string{"A": "1", "E": "", "A_B": "2"})
	for _, tc := range []struct {
		in, keep, drop string
	}{
		{"$A", "1", "1"},
		{"${A}x", "1x", "1x"},
		{"$A_B-$A", "2-1", "2-1"},
		{"$E|${E:-d}", "|", "|"},
		{"${Z:-d}", "d", "d"},
		{"${Z:-}", "", ""},
		{"$Z/${Z}", "$Z/${Z}", "/"},
		{"cost $ 5 and ${", "cost $ 5 and ${", "cost $ 5 and ${"},
		{"$", "$", "$"},
	} {
		if got := expand(tc.in, lookup, true); got != tc.keep {
			t.Errorf("expand(%q, keep) = %q, want %q", tc.in, got, tc.keep)
		}
		if got := expand(tc.in, lookup, false); got != tc.drop {
			t.Errorf("expand(%q, drop) = %q, want %q", tc.in, got, tc.drop)
		}
	}
}

func TestRefuseSelf(t *testing.T) {
	dir := t.TempDir()
	self := filepath.Join(dir, "server")
	other := filepath.Join(dir, "other")
	for _, p := range []string{self, other} {
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(self, filepath.Join(dir, "link")); err != nil {
		t.Skip(err)
	}
	t.Setenv("PATH", dir)
	for _, c := range []struct {
		cmd, cwd string
		refused  bool
	}{
		{self, "", true}, {filepath.Join(dir, "link"), "", true}, {"server", "", true}, {"./link", dir, true},
		{other, "", false}, {"other", "", false}, {"no-such-command", "", false},
	} {
		cfg := &Config{Servers: []ServerConfig{{Name: "x", Command: c.cmd, Cwd: c.cwd}, {Name: "web", URL: "http://h/"}}}
		err := RefuseSelf(cfg, self)
		if (err != nil) != c.refused || err != nil && !strings.Contains(err.Error(), "mcpServers.x.command: ") {
			t.Errorf("%q in %q: %v", c.cmd, c.cwd, err)
		}
	}
}

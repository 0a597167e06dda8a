package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/mcptest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/mcphost"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// mcpConfig builds the downstream test server and writes a configuration
// with it (as "good", offering echo) and a server that cannot start.
func mcpConfig(t *testing.T) string {
	t.Helper()
	bin, cleanup, err := geminitest.BuildMCPDown()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	dir := t.TempDir()
	path := filepath.Join(dir, "settings.json")
	data := fmt.Sprintf(`{"ui": {"theme": "x"}, "mcpServers": {
  "good": {"command": %q, "args": ["-tool", "echo", "-tool", "say hi", "-self-timeout", "1m"], "trust": true},
  "gone": {"command": %q}
}}`, bin, filepath.Join(dir, "no-such-server"))
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMCPList runs `mcp list` on a working and a broken server: the
// CLI's line for each, the reason of the failure, the declared tools.
func TestMCPList(t *testing.T) {
	path := mcpConfig(t)
	var out, errs strings.Builder
	code := Run(context.Background(), []string{"mcp", "list", "--mcp-config", path}, IO{Stdout: &out, Stderr: &errs, Getenv: func(string) string { return "" }})
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errs.String())
	}
	got := out.String()
	for _, want := range []string{
		"Configured MCP servers:\n\n",
		"✓ good: ", " -tool echo -tool say hi -self-timeout 1m (stdio) - Connected\n",
		"    mcp_good_echo (echo)\n",
		"    mcp_good_say_hi (say hi)\n",
		"✗ gone: ", "no-such-server (stdio) - Failed\n    reason: ",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	out.Reset()
	if code := Run(context.Background(), []string{"mcp", "list"}, IO{Stdout: &out, Stderr: &errs, Getenv: func(string) string { return "" }}); code != 0 || !strings.Contains(out.String(), "No MCP servers configured: give --mcp-config FILE") {
		t.Errorf("without a configuration: exit %d %q", code, out.String())
	}
	if code := Run(context.Background(), []string{"mcp", "lsit"}, IO{Stdout: &out, Stderr: &errs}); code != 2 {
		t.Errorf("an unknown mcp command: exit %d", code)
	}
}

// TestAPIBackendGetsToolHost: with --mcp-config the API backend is given
// the host, the mcp-servers resource shows it, and closing the backend
// closes the host; a bad file stops the start with the file's error.
func TestAPIBackendGetsToolHost(t *testing.T) {
	t.Setenv("GEMINI_API_KEY", "k")
	store := memstore.New(session.Options{})
	defer store.Close()
	log := slog.New(slog.DiscardHandler)
	saved := newAPIBackend
	t.Cleanup(func() { newAPIBackend = saved })
	var given backend.ToolHost
	newAPIBackend = func(_ *config.Config, _ func(string) string, _ session.Store, tools backend.ToolHost, _ *slog.Logger) (backend.Backend, backend.TokenCounter, error) {
		given = tools
		return &stubAPI{}, nil, nil
	}

	b, err := newBackend(parse(t, "--backend", "api"), IO{}.env(), store, log)
	if err != nil {
		t.Fatal(err)
	}
	if given != nil || b.Host != nil {
		t.Fatalf("without --mcp-config the API backend got a host: %v", given)
	}
	b.Close()

	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte(`{"mcpServers":{"db":{"command":"x","timeout":-1}}}`), 0o600)
	if _, err := newBackend(parse(t, "--backend", "api", "--mcp-config", bad), IO{}.env(), store, log); err == nil || !strings.Contains(err.Error(), "mcpServers.db.timeout") {
		t.Fatalf("a bad configuration: %v", err)
	}

	b, err = newBackend(parse(t, "--backend", "api", "--mcp-config", mcpConfig(t)), IO{}.env(), store, log)
	if err != nil {
		t.Fatal(err)
	}
	host := b.Host
	if host == nil || given != backend.ToolHost(host) {
		t.Fatalf("the API backend got %v, the backend holds %v", given, host)
	}
	ctx := geminitest.Context(t)
	for {
		ch := host.Changed()
		if len(host.Tools()) == 2 {
			break
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("tools %v", host.Status())
		}
	}

	srv := mcp.NewServer(&mcp.Implementation{Name: "s"}, nil)
	addMCPServersResource(srv, b.Host)
	cs := mcptest.Connect(t, srv, nil)
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: MCPServersURI})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Servers []mcphost.ServerStatus }
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &doc); err != nil || len(doc.Servers) != 2 {
		t.Fatalf("resource %q: %v", res.Contents[0].Text, err)
	}
	if s := doc.Servers[0]; s.Name != "good" || s.State != mcphost.StateConnected || len(s.Tools) != 2 || !s.Trust {
		t.Errorf("good: %+v", s)
	}
	b.Close()
	if st := host.Status(); st[0].State != mcphost.StateDisconnected {
		t.Errorf("after Close: %+v", st[0])
	}
}

// TestMCPAuthRefuses: `mcp auth` without a name, without a configuration,
// for a server the configuration lacks or a stdio server exits 2 with a
// clear error, and writes no token file.
func TestMCPAuthRefuses(t *testing.T) {
	path := mcpConfig(t)
	state := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "auth"}, "mcp auth NAME [flags]"},
		{[]string{"mcp", "auth", "--mcp-config", path}, "mcp auth NAME [flags]"},
		{[]string{"mcp", "auth", "good", "--state-dir", state}, "give --mcp-config FILE"},
		{[]string{"mcp", "auth", "nope", "--mcp-config", path, "--state-dir", state}, `no server "nope" in ` + path + " (it has: good, gone)"},
		{[]string{"mcp", "auth", "good", "--mcp-config", path, "--state-dir", state}, `"good" is a stdio server: only remote (url, httpUrl) servers sign in`},
	} {
		var out, errs strings.Builder
		code := Run(context.Background(), tc.args, IO{Stdout: &out, Stderr: &errs, Getenv: func(string) string { return "" }})
		if code != 2 || !strings.Contains(errs.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errs.String(), tc.want)
		}
	}
	if entries, _ := os.ReadDir(state); len(entries) != 0 {
		t.Errorf("the state directory got %v", entries)
	}
}

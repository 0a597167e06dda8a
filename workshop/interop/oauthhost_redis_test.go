package interop

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
)

// TestHostTokensInRedis: replicas share the host's sign-in through a
// Redis --store. `mcp auth` runs in one process with its own state
// directory; a server with another state directory and the same store
// then lets Gemini call the protected downstream tool with that token,
// refreshing it and keeping the new one in Redis, where a third process
// (`mcp list`, the first state directory) finds it. The tokens are one
// hash field per issuer under the store's prefix; no token file is
// written in either state directory.
func TestHostTokensInRedis(t *testing.T) {
	tl := tools(t)
	t.Parallel()
	p := startProvider(t, tl)
	rs := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: rs.Addr(), MaxRetries: -1})
	t.Cleanup(func() { rdb.Close() })
	downURL, subjects := protectedDown(t, p, "http")
	dir := t.TempDir()
	cfgData, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"down": map[string]any{"httpUrl": downURL, "trust": true}}})
	cfg := filepath.Join(dir, "mcp.json")
	if err := os.WriteFile(cfg, cfgData, 0o600); err != nil {
		t.Fatal(err)
	}
	api := fakeapi.New()
	t.Cleanup(api.Close)
	stateA, stateB := filepath.Join(dir, "state-a"), filepath.Join(dir, "state-b")
	env := append(os.Environ(), "HOME="+filepath.Join(dir, "home"), "GEMINI_MCP_STORE="+rs.URL(0), "GEMINI_MCP_STORE_PREFIX=team:",
		"GEMINI_API_KEY=test-key", "GOOGLE_GEMINI_BASE_URL="+api.URL())
	envA, envB := append(env[:len(env):len(env)], "GEMINI_MCP_STATE_DIR="+stateA), append(env[:len(env):len(env)], "GEMINI_MCP_STATE_DIR="+stateB)
	key := "team:oauth:" + downURL
	kept := func() keptToken {
		t.Helper()
		h, err := rdb.HGetAll(t.Context(), key).Result()
		var k keptToken
		if err != nil || len(h) != 1 || json.Unmarshal([]byte(h[p.issuer]), &k) != nil {
			t.Fatalf("Redis holds %d tokens for the server (%v), want one of %s", len(h), err, p.issuer)
		}
		return k
	}

	p.setTTL(t, 2) // every use refreshes
	auth := run(t, 2*time.Minute, append(envA, "BROWSER="+os.Args[0], EnvBrowser+"=1"), dir, serverBin, "mcp", "auth", "down", "--mcp-config", cfg)
	if auth.code != 0 || !strings.Contains(auth.stdout, "Signed in to down ("+downURL+"): 1 tools.") {
		t.Fatalf("mcp auth (exit %d):\n%s\n%s", auth.code, auth.stdout, auth.stderr)
	}
	first := kept()
	if first.Server != downURL || first.Issuer != p.issuer || first.AccessToken == "" || first.RefreshToken == "" {
		t.Fatalf("kept token %+v", first)
	}
	if ttl := rdb.PTTL(t.Context(), key).Val(); ttl < 89*24*time.Hour {
		t.Errorf("the token's hash expires in %v, want about 90 days", ttl)
	}

	stderr := newSignalBuffer()
	cmd := exec.Command(serverBin, "--backend", "api", "--mcp-config", cfg, "--log-level", "debug")
	cmd.Env, cmd.Dir, cmd.Stderr = envB, dir, stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "oauth-redis-test", Version: "1"}, nil).
		Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	stderr.wait(t, `msg="MCP server connected"`)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": `[[call:mcp_down_echo:{"text":"shared"}]]`}})
	if err != nil {
		t.Fatalf("chat: %v\n%s", err, stderr)
	}
	if out := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(out, `echo {\"text\":\"shared\"}`) {
		t.Fatalf("answer %q does not hold the tool's result\n%s", out, stderr)
	}
	if !strings.Contains(stderr.String(), "OAuth token refreshed") {
		t.Errorf("the expiring token was not refreshed:\n%s", stderr)
	}
	cs.Close()
	second := kept()
	if second.AccessToken == first.AccessToken || second.RefreshToken == "" {
		t.Errorf("the server did not keep its refreshed token in Redis")
	}
	if seen, _ := os.ReadFile(subjects); !strings.Contains(string(seen), p.issuer+" user-1\n") {
		t.Errorf("the downstream server saw the subjects %q, want user-1's", seen)
	}

	list := run(t, time.Minute, envA, dir, serverBin, "mcp", "list", "--mcp-config", cfg)
	if ok := regexp.MustCompile(`(?m)^✓ down: ` + regexp.QuoteMeta(downURL) + ` \(http\) - Connected$`); list.code != 0 || !ok.MatchString(list.stdout) {
		t.Errorf("mcp list with the first state directory (exit %d):\n%s\n%s", list.code, list.stdout, list.stderr)
	}
	for _, state := range []string{stateA, stateB} {
		if _, err := os.Stat(filepath.Join(state, "mcp-oauth-tokens.json")); !os.IsNotExist(err) {
			t.Errorf("a token file is in %s: %v", state, err)
		}
	}
	logs := auth.stdout + auth.stderr + list.stdout + list.stderr + stderr.String()
	for _, secret := range []string{first.AccessToken, first.RefreshToken, second.AccessToken, second.RefreshToken} {
		if strings.Contains(logs, secret) {
			t.Errorf("a token was printed")
		}
	}
}

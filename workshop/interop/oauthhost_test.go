package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

var (
	mcpdownOnce sync.Once
	mcpdownBin  string
	mcpdownErr  error
)

// mcpdown builds the downstream test server once; it is left in the
// build's temporary directory, which the OS cleans.
func mcpdown(t *testing.T) string {
	t.Helper()
	mcpdownOnce.Do(func() { mcpdownBin, _, mcpdownErr = geminitest.BuildMCPDown() })
	if mcpdownErr != nil {
		t.Fatal(mcpdownErr)
	}
	return mcpdownBin
}

// protectedDown starts mcpdown over Streamable HTTP, behind the provider's
// tokens, and returns its URL; the file it returns gets the subject of
// every request it lets through.
func protectedDown(t *testing.T, p *oidcProvider, transport string) (string, string) {
	t.Helper()
	subjects := filepath.Join(t.TempDir(), "subjects")
	cmd := exec.Command(mcpdown(t), "-transport", transport, "-tool", "echo", "-self-timeout", "5m", "-auth-issuer", p.issuer, "-auth-log", subjects)
	stderr := &geminitest.LockedBuffer{}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("mcpdown stderr:\n%s", stderr)
		}
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	u, ok := strings.CutPrefix(strings.TrimSpace(line), "url ")
	if err != nil || !ok {
		t.Fatalf("mcpdown said %q: %v", line, err)
	}
	return u, subjects
}

// post posts form to the provider and decodes its JSON answer.
func (p *oidcProvider) post(t *testing.T, path string, form url.Values) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.issuer+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %s", path, res.Status)
	}
}

// setTTL sets the lifetime of the access tokens the provider issues.
func (p *oidcProvider) setTTL(t *testing.T, seconds int) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.issuer+"/test/ttl", strings.NewReader(`{"ttl":`+itoa(seconds)+`}`))
	var out struct{ TTL int }
	p.do(t, req, &out)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// keptToken is the token file's entry for server.
type keptToken struct {
	Server       string `json:"server"`
	Issuer       string `json:"issuer"`
	ClientID     string `json:"client_id"`
	AccessToken  string `json:"access_token"`
	RefreshToken string `json:"refresh_token"`
}

func readKept(t *testing.T, path string) keptToken {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("token file: %v", err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	var f struct{ Tokens []keptToken }
	if err := json.Unmarshal(data, &f); err != nil || len(f.Tokens) != 1 {
		t.Fatalf("token file holds %s", data)
	}
	return f.Tokens[0]
}

// TestHostSignsIn: a downstream go-sdk server protected by the real
// OpenID provider. Before a sign-in the host reports it as needing one
// (mcp list names the command); `mcp auth` discovers the provider from
// the server's 401, registers itself, runs the authorization code flow
// with PKCE through a browser (the test binary, following redirects) to
// its loopback callback and keeps the tokens in a 0600 file, printing no
// secret. Then the server (API backend, the fake Gemini API) lets Gemini
// call the downstream tool with the token, refreshing it as it expires;
// once the provider revokes the refresh token the call fails at once with
// an error that names `mcp auth`, and mcp list shows the server needing
// a sign-in again. Over Streamable HTTP and SSE.
func TestHostSignsIn(t *testing.T) {
	tl := tools(t)
	t.Parallel()
	p := startProvider(t, tl)
	for _, transport := range []string{"http", "sse"} {
		t.Run(transport, func(t *testing.T) {
			downURL, subjects := protectedDown(t, p, transport)
			dir := t.TempDir()
			server := map[string]any{"httpUrl": downURL, "trust": true}
			if transport == "sse" {
				server = map[string]any{"url": downURL, "type": "sse", "trust": true}
			}
			cfgData, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"down": server}})
			cfg := filepath.Join(dir, "mcp.json")
			if err := os.WriteFile(cfg, cfgData, 0o600); err != nil {
				t.Fatal(err)
			}
			api := fakeapi.New()
			t.Cleanup(api.Close)
			state := filepath.Join(dir, "state")
			env := append(os.Environ(), "HOME="+filepath.Join(dir, "home"), "GEMINI_MCP_STATE_DIR="+state,
				"GEMINI_API_KEY=test-key", "GOOGLE_GEMINI_BASE_URL="+api.URL())

			list := run(t, time.Minute, env, dir, serverBin, "mcp", "list", "--mcp-config", cfg)
			needs := regexp.MustCompile(`(?m)^⚠ down: ` + regexp.QuoteMeta(downURL) + ` \(` + transport + `\) - Needs sign-in\n    reason: .*run ` + "`gemini-mcp-server mcp auth down`")
			if list.code != 0 || !needs.MatchString(list.stdout) {
				t.Fatalf("mcp list before the sign-in (exit %d):\n%s\n%s", list.code, list.stdout, list.stderr)
			}

			// serve starts the server (API backend) over stdio, with the
			// host on the configuration, and returns a chat that asks
			// Gemini to call the downstream tool.
			serve := func() (*mcp.ClientSession, *signalBuffer, func(string) string) {
				stderr := newSignalBuffer()
				cmd := exec.Command(serverBin, "--backend", "api", "--mcp-config", cfg, "--log-level", "debug")
				cmd.Env, cmd.Dir, cmd.Stderr = env, dir, stderr
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "oauth-host-test", Version: "1"}, nil).
					Connect(t.Context(), &mcp.CommandTransport{Command: cmd}, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cs.Close() })
				call := func(text string) string {
					t.Helper()
					ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
					defer cancel()
					prompt := `[[call:mcp_down_echo:{"text":"` + text + `"}]]`
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": prompt}})
					if err != nil {
						t.Fatalf("chat: %v\n%s", err, stderr)
					}
					return res.Content[0].(*mcp.TextContent).Text
				}
				return cs, stderr, call
			}

			// Before the sign-in, a call Gemini makes of the server's tool
			// is answered with the command that signs in.
			cs, stderr, call := serve()
			stderr.wait(t, `msg="MCP server needs sign-in"`)
			if out := call("too early"); !strings.Contains(out, "needs sign-in: run `gemini-mcp-server mcp auth down`") {
				t.Errorf("before the sign-in the answer is %q, want the error naming mcp auth", out)
			}

			// Access tokens that live 2 s, less than the host's margin:
			// every use refreshes.
			p.setTTL(t, 2)
			auth := run(t, 2*time.Minute, append(env, "BROWSER="+os.Args[0], EnvBrowser+"=1"), dir, serverBin, "mcp", "auth", "down", "--mcp-config", cfg)
			if auth.code != 0 || !strings.Contains(auth.stdout, "Signed in to down ("+downURL+"): 1 tools.") || !strings.Contains(auth.stdout, p.issuer+"/auth?") {
				t.Fatalf("mcp auth (exit %d):\n%s\n%s", auth.code, auth.stdout, auth.stderr)
			}
			tokenFile := filepath.Join(state, "mcp-oauth-tokens.json")
			first := readKept(t, tokenFile)
			if first.Server != downURL || first.Issuer != p.issuer || first.AccessToken == "" || first.RefreshToken == "" || first.ClientID == "" {
				t.Fatalf("kept token %+v", first)
			}
			for _, secret := range []string{first.AccessToken, first.RefreshToken} {
				if strings.Contains(auth.stdout+auth.stderr+list.stdout+list.stderr, secret) {
					t.Errorf("a token was printed")
				}
			}

			// The running server takes the sign-in up at its next try of
			// the server, without a restart.
			stderr.wait(t, `msg="MCP server connected"`)
			if out := call("signed in"); !strings.Contains(out, `echo {\"text\":\"signed in\"}`) {
				t.Fatalf("answer %q does not hold the tool's result\n%s", out, stderr)
			}
			if !strings.Contains(stderr.String(), "OAuth token refreshed") {
				t.Errorf("the expiring token was not refreshed:\n%s", stderr)
			}
			second := readKept(t, tokenFile)
			if second.AccessToken == first.AccessToken {
				t.Errorf("the refreshed token was not kept")
			}
			seen, _ := os.ReadFile(subjects)
			if !strings.Contains(string(seen), p.issuer+" user-1\n") {
				t.Errorf("the downstream server saw the subjects %q, want user-1's", seen)
			}
			if bytes.Contains([]byte(stderr.String()), []byte(second.AccessToken)) || strings.Contains(stderr.String(), second.RefreshToken) {
				t.Errorf("a token reached the log")
			}

			p.post(t, "/token/revocation", url.Values{"token": {second.RefreshToken}, "token_type_hint": {"refresh_token"}, "client_id": {second.ClientID}})
			out := call("after revocation")
			if !strings.Contains(out, "needs sign-in: run `gemini-mcp-server mcp auth down`") {
				t.Errorf("after the revocation the answer is %q, want the call's error naming mcp auth\n%s", out, stderr)
			}
			cs.Close()
			list = run(t, time.Minute, env, dir, serverBin, "mcp", "list", "--mcp-config", cfg)
			if !needs.MatchString(list.stdout) {
				t.Errorf("mcp list after the revocation:\n%s\n%s", list.stdout, list.stderr)
			}
		})
	}
}

// signalBuffer is a process's stderr that a test waits on.
type signalBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{} // closed and replaced on every write
}

func newSignalBuffer() *signalBuffer { return &signalBuffer{changed: make(chan struct{})} }

func (b *signalBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.changed)
	b.changed = make(chan struct{})
	return b.buf.Write(p)
}

func (b *signalBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// wait waits until the buffer holds s; the minute is a last resort that
// a passing test never waits out.
func (b *signalBuffer) wait(t *testing.T, s string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := b.waitCtx(ctx, s); err != nil {
		t.Fatal(err)
	}
}

// waitCtx waits until the buffer holds s, or ctx ends.
func (b *signalBuffer) waitCtx(ctx context.Context, s string) error {
	for {
		b.mu.Lock()
		ch, has := b.changed, strings.Contains(b.buf.String(), s)
		b.mu.Unlock()
		if has {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("no %q in the log:\n%s", s, b)
		}
	}
}

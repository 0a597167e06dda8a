package interop

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	mcpclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// EnvOIDCRequired, set to 1 (scripts/test.sh does), fails the OAuth tests
// when the OpenID provider (npm oidc-provider, in npm/package.json) is not
// installed, rather than skipping them.
const EnvOIDCRequired = "GEMINI_MCP_OIDC_REQUIRED"

// oidcProvider is a real OpenID provider, oidc/provider.mjs on npm
// oidc-provider, on a loopback port.
type oidcProvider struct {
	issuer string
}

// startProvider starts one provider for the test, and stops it when the
// test ends; env is added to its environment.
func startProvider(t *testing.T, n npmTools, env ...string) *oidcProvider {
	t.Helper()
	if _, err := os.Stat(n.path("oidc-provider", "package.json")); err != nil {
		msg := "npm oidc-provider is not installed under " + n.dir + " (install workshop/interop/npm's lock again)"
		if required() || os.Getenv(EnvOIDCRequired) == "1" {
			t.Fatalf("%s; required because CI, %s=1 or %s=1 is set", msg, fakeapi.EnvRequired, EnvOIDCRequired)
		}
		t.Skip(msg)
	}
	script, err := filepath.Abs(filepath.Join("oidc", "provider.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(n.node, script)
	cmd.Env = append(append(n.env(t), "NODE_PATH="+filepath.Join(n.dir, "node_modules")), env...)
	setProcessGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &geminitest.LockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the OpenID provider: %v", err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		io.Copy(io.Discard, stdout)
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		stdin.Close() // the provider exits when its stdin closes
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			t.Errorf("the OpenID provider did not exit 10 s after its stdin closed; killing it")
			cmd.Process.Kill()
			<-exited
		}
		if left := reapGroup(cmd, leftoverBound); left != "" {
			t.Errorf("the OpenID provider left processes running %v after it exited:%s", leftoverBound, left)
		}
	})
	var line string
	select {
	case line = <-lines:
	case err := <-exited:
		t.Fatalf("the OpenID provider exited before serving (%v):\n%s", err, stderr)
	case <-time.After(60 * time.Second):
		t.Fatalf("the OpenID provider did not report its issuer in 60 s:\n%s", stderr)
	}
	var hello struct{ Issuer string }
	if err := json.Unmarshal([]byte(line), &hello); err != nil || hello.Issuer == "" {
		t.Fatalf("the OpenID provider said %q, want {\"issuer\": URL}\n%s", line, stderr)
	}
	return &oidcProvider{issuer: hello.Issuer}
}

// token gets a JWT access token for resource with the client credentials
// grant, as client (mcp-test or mcp-other: each is its own subject).
func (p *oidcProvider) token(t *testing.T, client, scope, resource string) string {
	t.Helper()
	tok := p.issue(t, client, scope, resource)
	if strings.Count(tok, ".") != 2 {
		t.Fatalf("the provider's access token %q is not a JWT", tok)
	}
	return tok
}

// issue gets an access token for resource ("": none named) with the
// client credentials grant, as client.
func (p *oidcProvider) issue(t *testing.T, client, scope, resource string) string {
	t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}, "scope": {scope}}
	if resource != "" {
		form.Set("resource", resource)
	}
	req, err := http.NewRequest(http.MethodPost, p.issuer+"/token", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(client, client+"-secret-0123456789")
	var out struct {
		AccessToken string `json:"access_token"`
	}
	p.do(t, req, &out)
	return out.AccessToken
}

// sign has the provider sign claims with its current key.
func (p *oidcProvider) sign(t *testing.T, claims map[string]any) string {
	t.Helper()
	b, _ := json.Marshal(claims)
	req, _ := http.NewRequest(http.MethodPost, p.issuer+"/test/sign", bytes.NewReader(b))
	var out struct{ Token string }
	p.do(t, req, &out)
	return out.Token
}

// rotate replaces the provider's signing key.
func (p *oidcProvider) rotate(t *testing.T) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.issuer+"/test/rotate", nil)
	var out struct{ Kid string }
	p.do(t, req, &out)
}

// publicKey is the PEM of the provider's current RSA key and its kid.
func (p *oidcProvider) publicKey(t *testing.T) ([]byte, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, p.issuer+"/jwks", nil)
	var set jose.JSONWebKeySet
	p.do(t, req, &set)
	if len(set.Keys) == 0 {
		t.Fatal("the provider's JWKS has no key")
	}
	der, err := x509.MarshalPKIXPublicKey(set.Keys[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), set.Keys[0].KeyID
}

func (p *oidcProvider) do(t *testing.T, req *http.Request, out any) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: %s %s", req.Method, req.URL, resp.Status, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		t.Fatalf("%s %s: %v in %s", req.Method, req.URL, err, body)
	}
}

// unsigned makes a compact JWS of header and claims with sig as its
// signature (hmacKey, when set, signs it with HMAC-SHA256).
func unsigned(header, claims map[string]any, hmacKey []byte) string {
	enc := func(v any) string {
		b, _ := json.Marshal(v)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	input := enc(header) + "." + enc(claims)
	sig := ""
	if hmacKey != nil {
		m := hmac.New(sha256.New, hmacKey)
		m.Write([]byte(input))
		sig = base64.RawURLEncoding.EncodeToString(m.Sum(nil))
	}
	return input + "." + sig
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"oauth-test","version":"1"}}}`

// initialize POSTs an initialize to url with token (none if "") and
// returns the response, its body read.
func initialize(t *testing.T, u, token, session string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, u, strings.NewReader(initializeBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp, string(body)
}

// oauthClient is an mcp-go client of u (/mcp or /sse) with token, started
// and initialized.
func oauthClient(t *testing.T, u, token string) *mcpclient.Client {
	t.Helper()
	headers := map[string]string{"Authorization": "Bearer " + token}
	var tr transport.Interface
	var err error
	if strings.HasSuffix(u, "/sse") {
		tr, err = transport.NewSSE(u, transport.WithHeaders(headers))
	} else {
		tr, err = transport.NewStreamableHTTP(u, transport.WithHTTPHeaders(headers))
	}
	if err != nil {
		t.Fatal(err)
	}
	c := mcpclient.NewClient(tr, mcpclient.WithProtocolVersion(versionLegacy))
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("start %s: %v", u, err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Initialize(t.Context(), mcpgo.InitializeRequest{Params: mcpgo.InitializeParams{
		ClientInfo: mcpgo.Implementation{Name: "oauth-test", Version: "1"},
	}}); err != nil {
		t.Fatalf("initialize %s: %v", u, err)
	}
	return c
}

// callText calls tool and returns its text, failing on an error result.
func callText(t *testing.T, c *mcpclient.Client, tool string, args map[string]any) (string, *mcpgo.CallToolResult) {
	t.Helper()
	res, err := c.CallTool(t.Context(), mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: tool, Arguments: args}})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var texts []string
	for _, content := range res.Content {
		if tc, ok := mcpgo.AsTextContent(content); ok {
			texts = append(texts, tc.Text)
		}
	}
	text := strings.Join(texts, "\n")
	if res.IsError {
		t.Fatalf("%s: error result %q", tool, text)
	}
	return text, res
}

// chatSession runs a chat with prompt and returns its session id.
func chatSession(t *testing.T, c *mcpclient.Client, prompt string) string {
	t.Helper()
	text, res := callText(t, c, "chat", map[string]any{"prompt": prompt})
	if !strings.Contains(text, wantAnswer(prompt)) {
		t.Errorf("chat: %q, want the answer %q", text, wantAnswer(prompt))
	}
	var id string
	if res.Meta != nil {
		id, _ = res.Meta.AdditionalFields["sessionId"].(string)
	}
	if !uuidRE.MatchString(id) {
		t.Fatalf("chat: _meta %+v has no sessionId", res.Meta)
	}
	return id
}

// TestOAuthResourceServer runs the server as an OAuth resource server of a
// real OpenID provider (npm oidc-provider): the provider issues JWT
// access tokens for the server's resource URI with the client credentials
// grant, and the test shows what the server accepts and what it refuses.
func TestOAuthResourceServer(t *testing.T) {
	needServer(t)
	n := tools(t)
	idp := startProvider(t, n)
	stranger := startProvider(t, n) // an issuer the server does not trust
	env := map[string]string{"GEMINI_MCP_AUTH_ISSUER": idp.issuer}
	s := newServer(t, serverOpts{http: true, tokens: []string{testToken}, env: env})
	stateless := newServer(t, serverOpts{http: true, stateless: true, env: env})
	resource := s.base + "/mcp"

	t.Run("metadata", func(t *testing.T) {
		for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
			resp, err := http.Get(s.base + path)
			if err != nil {
				t.Fatal(err)
			}
			var meta struct {
				Resource             string   `json:"resource"`
				AuthorizationServers []string `json:"authorization_servers"`
				ScopesSupported      []string `json:"scopes_supported"`
			}
			err = json.NewDecoder(resp.Body).Decode(&meta)
			resp.Body.Close()
			if err != nil || resp.StatusCode != http.StatusOK || meta.Resource != resource ||
				len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != idp.issuer ||
				len(meta.ScopesSupported) != 1 || meta.ScopesSupported[0] != "gemini" {
				t.Errorf("GET %s: %s %+v (%v)", path, resp.Status, meta, err)
			}
		}
		resp, _ := initialize(t, resource, "", "")
		challenge := resp.Header.Get("WWW-Authenticate")
		want := `Bearer resource_metadata="` + s.base + `/.well-known/oauth-protected-resource/mcp", scope="gemini"`
		if resp.StatusCode != http.StatusUnauthorized || challenge != want {
			t.Errorf("initialize without a token: %s, WWW-Authenticate %q, want 401 and %q", resp.Status, challenge, want)
		}
	})

	t.Run("valid", func(t *testing.T) {
		for _, tc := range []struct{ name, url, resource string }{
			{"mcp", s.base + "/mcp", resource},
			{"mcp_stateless", stateless.base + "/mcp", stateless.base + "/mcp"},
			{"sse", s.base + "/sse", resource},
		} {
			t.Run(tc.name, func(t *testing.T) {
				c := oauthClient(t, tc.url, idp.token(t, "mcp-test", "gemini", tc.resource))
				chatSession(t, c, "hello over oauth "+tc.name)
			})
		}
		// A static token keeps working beside OAuth.
		if resp, body := initialize(t, resource, testToken, ""); resp.StatusCode != http.StatusOK {
			t.Errorf("initialize with the static token: %s %s", resp.Status, clip(body, 300))
		}
	})

	t.Run("refused", func(t *testing.T) {
		now := time.Now().Unix()
		claims := func(change map[string]any) map[string]any {
			c := map[string]any{"iss": idp.issuer, "sub": "mcp-test", "aud": resource, "scope": "gemini", "iat": now, "exp": now + 600}
			for k, v := range change {
				c[k] = v
			}
			return c
		}
		pub, kid := idp.publicKey(t)
		for _, tc := range []struct {
			name, token string
			status      int
			why         string // in the body
		}{
			{"wrong_audience", idp.sign(t, claims(map[string]any{"aud": "mcp-test"})), 401, "aud"},
			{"other_resource", idp.token(t, "mcp-test", "gemini", "http://127.0.0.1:1/mcp"), 401, "aud"},
			{"wrong_issuer", stranger.token(t, "mcp-test", "gemini", resource), 401, "issuer not trusted"},
			{"trusted_issuer_other_key", stranger.sign(t, claims(nil)), 401, "signing key"},
			{"expired", idp.sign(t, claims(map[string]any{"iat": now - 900, "exp": now - 300})), 401, "expired"},
			{"not_yet_valid", idp.sign(t, claims(map[string]any{"nbf": now + 300})), 401, "invalid token"},
			{"no_exp", idp.sign(t, claims(map[string]any{"exp": nil})), 401, "exp"},
			{"alg_none", unsigned(map[string]any{"alg": "none", "typ": "at+jwt"}, claims(nil), nil), 401, "allowed algorithm"},
			{"hs256_with_public_key", unsigned(map[string]any{"alg": "HS256", "kid": kid, "typ": "at+jwt"}, claims(nil), pub), 401, "allowed algorithm"},
			{"tampered", func() string {
				tok := idp.token(t, "mcp-test", "gemini", resource)
				parts := strings.Split(tok, ".")
				parts[1] = unsigned(nil, claims(map[string]any{"sub": "someone-else"}), nil)
				parts[1] = strings.Split(parts[1], ".")[1]
				return strings.Join(parts, ".")
			}(), 401, "signature"},
			{"not_a_jwt", "0123456789abcdef0123456789abcdef", 401, "invalid token"},
			{"missing_scope", idp.token(t, "mcp-test", "other", resource), 403, "insufficient scope"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				resp, body := initialize(t, resource, tc.token, "")
				challenge := resp.Header.Get("WWW-Authenticate")
				wantErr := `error="invalid_token"`
				if tc.status == http.StatusForbidden {
					wantErr = `error="insufficient_scope"`
				}
				if resp.StatusCode != tc.status || !strings.Contains(body, tc.why) ||
					!strings.Contains(challenge, wantErr) || !strings.Contains(challenge, `scope="gemini"`) ||
					!strings.Contains(challenge, `resource_metadata="`) {
					t.Errorf("%s: %s %q, WWW-Authenticate %q; want %d with %q and a challenge with %s", tc.name, resp.Status, clip(body, 300), challenge, tc.status, tc.why, wantErr)
				}
			})
		}
	})

	t.Run("key_rotation", func(t *testing.T) {
		if resp, body := initialize(t, resource, idp.token(t, "mcp-test", "gemini", resource), ""); resp.StatusCode != http.StatusOK {
			t.Fatalf("before the rotation: %s %s", resp.Status, clip(body, 300))
		}
		idp.rotate(t)
		if resp, body := initialize(t, resource, idp.token(t, "mcp-test", "gemini", resource), ""); resp.StatusCode != http.StatusOK {
			t.Errorf("a token signed with the new key: %s %s", resp.Status, clip(body, 300))
		}
	})

	t.Run("subjects", func(t *testing.T) {
		alice := idp.token(t, "mcp-test", "gemini", resource)
		bob := idp.token(t, "mcp-other", "gemini", resource)
		a := oauthClient(t, resource, alice)
		b := oauthClient(t, resource, bob)
		id := chatSession(t, a, "alice's secret plan")
		if text, _ := callText(t, a, "sessions", nil); !strings.Contains(text, id) {
			t.Errorf("sessions as its subject does not list %s:\n%s", id, text)
		}
		if text, _ := callText(t, b, "sessions", nil); strings.Contains(text, id) {
			t.Errorf("sessions as another subject lists %s:\n%s", id, text)
		}
		res, err := b.CallTool(t.Context(), mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: "chat-reply", Arguments: map[string]any{"sessionId": id, "prompt": "and?"}}})
		if err != nil || !res.IsError {
			t.Errorf("chat-reply on another subject's session: %+v, %v; want an error result", res, err)
		}
		// The MCP session of one subject is not the other's either.
		resp, _ := initialize(t, resource, alice, "")
		sid := resp.Header.Get("Mcp-Session-Id")
		if sid == "" {
			t.Fatalf("initialize: %s without Mcp-Session-Id", resp.Status)
		}
		if resp, body := initialize(t, resource, bob, sid); resp.StatusCode != http.StatusNotFound {
			t.Errorf("a request on another subject's MCP session: %s %s, want 404", resp.Status, clip(body, 200))
		}
	})
}

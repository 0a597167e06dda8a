package interop

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// cliStoredToken is one entry of the Gemini CLI's MCP OAuth token store,
// ~/.gemini/mcp-oauth-tokens.json, a JSON array. In 0.61.0 the CLI reads it
// as plain JSON (MCPOAuthTokenStorage in core's mcp/oauth-token-storage.ts;
// only GEMINI_FORCE_ENCRYPTED_FILE_STORAGE=true moves it to the encrypted
// hybrid storage), by server name; createTransport in tools/mcp-client.ts
// gives a server with a stored entry a DynamicStoredOAuthProvider, whose
// token the MCP SDK's transport sends as "Authorization: Bearer". A token
// within 5 minutes of expiresAt counts as expired: without a refresh token
// it is not sent.
type cliStoredToken struct {
	ServerName   string         `json:"serverName"`
	Token        cliTokenFields `json:"token"`
	ClientID     string         `json:"clientId,omitempty"`
	TokenURL     string         `json:"tokenUrl,omitempty"`
	MCPServerURL string         `json:"mcpServerUrl,omitempty"`
	UpdatedAt    int64          `json:"updatedAt"` // Unix milliseconds
}

type cliTokenFields struct {
	AccessToken  string `json:"accessToken"`
	RefreshToken string `json:"refreshToken,omitempty"`
	ExpiresAt    int64  `json:"expiresAt,omitempty"` // Unix milliseconds
	TokenType    string `json:"tokenType"`
	Scope        string `json:"scope,omitempty"`
}

// tokenStore is the path of the CLI's MCP OAuth token store.
func (g *geminiHome) tokenStore() string {
	return filepath.Join(g.home, ".gemini", "mcp-oauth-tokens.json")
}

// storeCLIToken writes entries as the CLI's MCP OAuth token store, mode
// 0600 as the CLI writes it.
func (g *geminiHome) storeCLIToken(t *testing.T, entries ...cliStoredToken) {
	t.Helper()
	b, err := json.MarshalIndent(entries, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(g.tokenStore(), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// jwtExpiry is the exp claim of the JWT tok, in Unix milliseconds as the
// CLI's store keeps expiresAt.
func jwtExpiry(t *testing.T, tok string) int64 {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("%q is not a JWT", clip(tok, 20))
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct{ Exp int64 }
	if err := json.Unmarshal(payload, &claims); err != nil || claims.Exp == 0 {
		t.Fatalf("the token's payload has no exp: %s (%v)", payload, err)
	}
	return claims.Exp * 1000
}

// exchange is one request that went through a recordingProxy, with the
// status the server answered it with.
type exchange struct {
	method, path string
	auth         string // the Authorization header
	status       int
	challenge    string // WWW-Authenticate
}

// recordingProxy is a reverse proxy on 127.0.0.1 in front of a server: it
// records what each request sent and got, so that the test sees the
// headers the client sent rather than only their effect.
type recordingProxy struct {
	url string // http://127.0.0.1:PORT

	mu        sync.Mutex
	exchanges []exchange
}

// newRecordingProxy listens on a loopback port; serve starts forwarding.
func newRecordingProxy(t *testing.T) (*recordingProxy, net.Listener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return &recordingProxy{url: "http://" + ln.Addr().String()}, ln
}

// serve forwards what ln accepts to target until the test ends.
func (p *recordingProxy) serve(t *testing.T, ln net.Listener, target string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	transport := &http.Transport{}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(u) },
		Transport:     transport,
		FlushInterval: -1, // SSE streams pass unbuffered
		ModifyResponse: func(resp *http.Response) error {
			p.record(exchange{method: resp.Request.Method, path: resp.Request.URL.Path, auth: resp.Request.Header.Get("Authorization"),
				status: resp.StatusCode, challenge: resp.Header.Get("WWW-Authenticate")})
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			p.record(exchange{method: r.Method, path: r.URL.Path, auth: r.Header.Get("Authorization"), status: http.StatusBadGateway})
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	// Full duplex: the server answers a call (its SSE headers, a progress
	// notification) while the transport may still be reading the call's
	// body, for the read after its declared length that checks it is not
	// longer. A half-duplex handler's server, on writing those headers,
	// drains and closes the body: that read then fails ("invalid Read on
	// closed Body"), the transport drops its connection to the server, and
	// the call's POST is cut, answered by neither side (golang/go#40747).
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			t.Errorf("the recording proxy: %v", err)
		}
		rp.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Close()
		transport.CloseIdleConnections()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("the recording proxy: %v", err)
		}
	})
}

// String shows e with its Authorization clipped.
func (e exchange) String() string {
	return fmt.Sprintf("%s %s (Authorization %q) %d %q", e.method, e.path, clip(e.auth, 16), e.status, e.challenge)
}

func (p *recordingProxy) record(e exchange) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.exchanges) < 10000 {
		p.exchanges = append(p.exchanges, e)
	}
}

// seen returns the exchanges so far.
func (p *recordingProxy) seen() []exchange {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.exchanges)
}

// TestRecordingProxyAnswerBeforeBody checks that the recording proxy
// carries an answer that begins before the request's body is all read. A
// Streamable HTTP server's answer to a call (its SSE headers, a progress
// notification) can begin while the proxy's transport still reads the
// call's body: it reads once more past the declared length, to check that
// the body is not longer. A proxy whose server drains and closes the body
// once the answer begins made that read fail now and then, and cut the
// call. Here the body comes only once the answer's headers are out: such a
// proxy, which drains the body before it sends them, never answers.
func TestRecordingProxyAnswerBeforeBody(t *testing.T) {
	t.Parallel()
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if err := rc.EnableFullDuplex(); err != nil {
			t.Error(err)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		if err := rc.Flush(); err != nil {
			t.Error(err)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("the server reading the body: %v", err)
			return
		}
		fmt.Fprintf(w, "data: %s\n\n", body)
	}))
	t.Cleanup(func() {
		target.CloseClientConnections()
		target.Close()
	})
	p, ln := newRecordingProxy(t)
	p.serve(t, ln, target.URL)

	client := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(client.CloseIdleConnections)
	// A guard: a proxy that waits for the body before it answers waits
	// for good.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	const body = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"chat"}}`
	pr, pw := io.Pipe()
	defer context.AfterFunc(ctx, func() { pw.CloseWithError(ctx.Err()) })()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url+"/mcp", pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = int64(len(body))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("no answer through the proxy before the body: %v", err)
	}
	defer resp.Body.Close()
	if _, err := io.WriteString(pw, body); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	got, err := io.ReadAll(resp.Body)
	if want := "data: " + body + "\n\n"; err != nil || string(got) != want {
		t.Errorf("the answer through the proxy: %q (%v), want %q", got, err, want)
	}
	if e := p.seen(); len(e) != 1 || e[0].status != http.StatusOK {
		t.Errorf("the proxy recorded %v, want one POST answered 200", e)
	}
}

// oauthBehindProxy starts a server that trusts idp behind a recording
// proxy, and returns both; the server's resource URI is the proxy's /mcp,
// as for a server behind a load balancer.
func oauthBehindProxy(t *testing.T, idp *oidcProvider) (*server, *recordingProxy) {
	t.Helper()
	p, ln := newRecordingProxy(t)
	s := newServer(t, serverOpts{http: true, env: map[string]string{
		"GEMINI_MCP_AUTH_ISSUER":   idp.issuer,
		"GEMINI_MCP_AUTH_AUDIENCE": p.url + "/mcp",
	}})
	p.serve(t, ln, s.base)
	return s, p
}

// TestGeminiCLIOAuth runs the real Gemini CLI, headless, against the
// server as an OAuth resource server of a real OpenID provider, with the
// server configured as its settings document it ("oauth": {"enabled":
// true}). With an access token for the server in the CLI's token store,
// the CLI sends it as a bearer token, gets the server's tools, and the
// model's call of chat runs as the token's subject. Without one, or with
// one the server refuses, the CLI gets a 401, follows its challenge to
// the protected-resource metadata and the provider, and stops at client
// registration (the provider offers none): no tool reaches the model, and
// nothing hangs.
func TestGeminiCLIOAuth(t *testing.T) {
	cli := fakeapi.RealCLI(t)
	needServer(t)
	t.Parallel()
	// Without dynamic registration: with it, the CLI's automatic sign-in
	// on a 401 asks "Do you want to continue? [Y/n]" on a headless run and
	// waits for an answer that never comes (stdin at /dev/null).
	idp := startProvider(t, tools(t), "OIDC_REGISTRATION=off")
	const tool = "mcp_gemini_chat"

	// setUp gives a CLI home the server as "gemini", trusted so that the
	// headless CLI may call its tools.
	setUp := func(t *testing.T) (*geminiHome, *server, *recordingProxy, string) {
		g := newGeminiHome(t, cli)
		s, p := oauthBehindProxy(t, idp)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("the CLI's exchanges through the proxy: %v", p.seen())
			}
		})
		resource := p.url + "/mcp"
		g.setServers(t, map[string]any{"gemini": map[string]any{
			"httpUrl": resource, "oauth": map[string]any{"enabled": true}, "trust": true,
		}})
		return g, s, p, resource
	}
	ask := func(t *testing.T, g *geminiHome, inner string) runResult {
		args, _ := json.Marshal(map[string]any{"prompt": inner})
		res := g.run(t, "-m", "gemini-interop-model", "-o", "json", "--prompt=Ask the other Gemini. [[call:"+tool+":"+string(args)+"]]")
		if res.code != 0 {
			t.Fatalf("gemini: exit %d\nstdout: %s\nstderr: %s", res.code, clip(res.stdout, 4000), clip(res.stderr, 8000))
		}
		return res
	}
	mcpList := func(t *testing.T, g *geminiHome, want string) {
		res := g.run(t, "mcp", "list")
		out := res.stdout + res.stderr
		if res.code != 0 || !regexp.MustCompile(`(?m)^`+want+`$`).MatchString(out) {
			t.Errorf("gemini mcp list: exit %d, does not say %s:\n%s", res.code, want, out)
		}
	}

	t.Run("stored_token", func(t *testing.T) {
		t.Parallel()
		g, s, p, resource := setUp(t)
		tok := idp.token(t, "mcp-test", "gemini", resource)
		g.storeCLIToken(t, cliStoredToken{
			ServerName:   "gemini",
			Token:        cliTokenFields{AccessToken: tok, TokenType: "Bearer", ExpiresAt: jwtExpiry(t, tok), Scope: "gemini"},
			TokenURL:     idp.issuer + "/token",
			MCPServerURL: resource,
			UpdatedAt:    time.Now().UnixMilli(),
		})
		mcpList(t, g, `✓ gemini: `+regexp.QuoteMeta(resource)+` \(http\) - Connected`)

		inner := "the Gemini CLI calls chat with an OAuth access token"
		res := ask(t, g, inner)
		checkToolRoundTrip(t, g.api.Requests(), tool, inner, res.stdout)

		// Every request the CLI sent to /mcp carried the stored token, and
		// none was refused.
		var posts int
		for _, e := range p.seen() {
			if e.path != "/mcp" {
				continue
			}
			if e.auth != "Bearer "+tok || e.status == http.StatusUnauthorized || e.status == http.StatusForbidden {
				t.Errorf("%v; want the stored token, accepted", e)
			}
			if e.method == http.MethodPost {
				posts++
			}
		}
		if posts == 0 {
			t.Errorf("the CLI sent no POST to /mcp through the proxy: %v", p.seen())
		}
		if n := countRuns(t, s, inner); n != 1 {
			t.Errorf("the fake CLI ran %d times with %q, want 1", n, inner)
		}

		// The conversation is the token's subject's: its sessions list it,
		// another subject's do not.
		title := strings.Join(strings.Fields(inner)[:4], " ")
		mine, _ := callText(t, oauthClient(t, resource, idp.token(t, "mcp-test", "gemini", resource)), "sessions", nil)
		if !strings.Contains(mine, title) {
			t.Errorf("sessions as the token's subject does not list the CLI's chat %q:\n%s", title, mine)
		}
		theirs, _ := callText(t, oauthClient(t, resource, idp.token(t, "mcp-other", "gemini", resource)), "sessions", nil)
		if strings.Contains(theirs, title) {
			t.Errorf("sessions as another subject lists the CLI's chat:\n%s", theirs)
		}
	})

	for _, tc := range []struct {
		name     string
		resource string // the resource of the stored token; "" for none
	}{
		{"no_token", ""},
		{"refused_token", "http://127.0.0.1:1/mcp"}, // another server's
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, s, p, resource := setUp(t)
			var tok string
			if tc.resource != "" {
				tok = idp.token(t, "mcp-test", "gemini", tc.resource)
				g.storeCLIToken(t, cliStoredToken{
					ServerName: "gemini",
					Token:      cliTokenFields{AccessToken: tok, TokenType: "Bearer", ExpiresAt: jwtExpiry(t, tok), Scope: "gemini"},
					UpdatedAt:  time.Now().UnixMilli(),
				})
			}
			mcpList(t, g, `✗ gemini: `+regexp.QuoteMeta(resource)+` \(http\) - Disconnected`)

			inner := "the Gemini CLI calls chat without a token the server takes"
			res := ask(t, g, inner)
			for i, r := range g.api.Requests() {
				if r.Method == fakeapi.MethodStream && slices.Contains(r.Tools, tool) {
					t.Errorf("request %d offers %s, which the CLI cannot have: %v", i, tool, r.Tools)
				}
			}
			if !strings.Contains(res.stderr, "MCP issues detected") {
				t.Errorf("the CLI does not say it had an MCP issue:\n%s", clip(res.stderr, 4000))
			}
			if n := countRuns(t, s, inner); n != 0 {
				t.Errorf("the fake CLI ran %d times with %q, want 0", n, inner)
			}

			// The server answered the CLI's requests 401, with the
			// challenge that names the metadata, and the CLI followed it.
			metadata := p.url + "/.well-known/oauth-protected-resource/mcp"
			sent := "" // the Authorization the CLI's POSTs carry
			if tok != "" {
				sent = "Bearer " + tok
			}
			var refused, followed bool
			for _, e := range p.seen() {
				switch {
				case e.path == "/mcp" && e.status/100 == 2:
					t.Errorf("accepted: %v", e)
				case e.path == "/mcp" && e.status == http.StatusUnauthorized:
					// A refused token gets its error named; no token, none.
					wantErr := e.auth != ""
					if (e.auth != "" && e.auth != "Bearer "+tok) || !strings.Contains(e.challenge, `resource_metadata="`+metadata+`"`) ||
						strings.Contains(e.challenge, `error="invalid_token"`) != wantErr {
						t.Errorf("401 to %v", e)
					}
					refused = refused || e.method == http.MethodPost && e.auth == sent
				case e.path == "/.well-known/oauth-protected-resource/mcp" && e.status == http.StatusOK:
					followed = true
				}
			}
			if !refused || !followed {
				t.Errorf("refused a POST /mcp %v, the CLI fetched the metadata %v; exchanges: %v", refused, followed, p.seen())
			}
			// It signed in to nothing, and left a stored token alone.
			b, err := os.ReadFile(g.tokenStore())
			switch {
			case tok == "" && !errors.Is(err, os.ErrNotExist):
				t.Errorf("the CLI wrote a token store (%v): %s", err, clip(string(b), 200))
			case tok != "" && (err != nil || !strings.Contains(string(b), tok)):
				t.Errorf("the CLI's token store no longer holds the token (%v)", err)
			}
		})
	}
}

// countRuns is how many times s's fake CLI ran with prompt.
func countRuns(t *testing.T, s *server, prompt string) int {
	t.Helper()
	var n int
	for _, inv := range s.invocations(t) {
		if inv.Prompt == prompt {
			n++
		}
		if alive(inv.Pid) {
			t.Errorf("the fake CLI (pid %d) is still running", inv.Pid)
		}
	}
	return n
}

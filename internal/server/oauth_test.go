package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/oauth"
)

// TestOAuthGuard: with OAuth beside static tokens, a static token is
// checked first and never reaches the verifier; any other token is the
// verifier's, refused with the RFC 9728 challenge and RFC 6750 error codes.
func TestOAuthGuard(t *testing.T) {
	t.Parallel()
	var verified atomic.Int32
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		verified.Add(1)
		info := &auth.TokenInfo{UserID: "https://idp.example.com " + token, Expiration: time.Now().Add(time.Hour), Scopes: []string{"gemini"}}
		switch token {
		case "jwt-alice", "jwt-bob":
			return info, nil
		case "jwt-just-expired":
			// Expired within the skew the verifier allows.
			info.Expiration = time.Now().Add(-10 * time.Second)
			return info, nil
		case "jwt-noscope":
			info.Scopes = []string{"other"}
			return info, nil
		}
		return nil, auth.ErrInvalidToken
	}
	o := &OAuthOptions{Verify: verify, Resource: "https://mcp.example.com/mcp", Issuers: []string{"https://idp.example.com"}, Scopes: []string{"gemini"}, ClockSkew: 30 * time.Second}
	h := newHTTPHarness(t, HTTPOptions{Tokens: []string{testToken}, OAuth: o})
	if got, want := o.MetadataURL(), "https://mcp.example.com/.well-known/oauth-protected-resource/mcp"; got != want {
		t.Errorf("MetadataURL() = %q, want %q", got, want)
	}
	challenge := `Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="gemini"`
	for _, tc := range []struct {
		token, want string
		status      int
	}{
		{"", challenge, 401},
		{"not-a-token", challenge + `, error="invalid_token"`, 401},
		{"jwt-noscope", challenge + `, error="insufficient_scope"`, 403},
	} {
		req, _ := http.NewRequest(http.MethodPost, h.url+PathMCP, strings.NewReader(`{}`))
		if tc.token != "" {
			req.Header.Set("Authorization", "Bearer "+tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != tc.status || got != tc.want {
			t.Errorf("token %q: %s, WWW-Authenticate %q; want %d and %q", tc.token, resp.Status, got, tc.status, tc.want)
		}
	}
	verified.Store(0)
	if _, err := h.connect(t, "streamable", testToken, nil); err != nil {
		t.Fatalf("the static token: %v", err)
	}
	if n := verified.Load(); n != 0 {
		t.Errorf("the static token went to the verifier %d times", n)
	}
	for _, transport := range []string{"streamable", "sse"} {
		if _, err := h.connect(t, transport, "jwt-alice", nil); err != nil {
			t.Errorf("%s with an access token: %v", transport, err)
		}
	}
	if _, err := h.connect(t, "streamable", "jwt-just-expired", nil); err != nil {
		t.Errorf("a token expired within the clock skew: %v", err)
	}
	for _, path := range []string{PathResourceMetadata, PathResourceMetadata + PathMCP} {
		resp, err := http.Get(h.url + path)
		if err != nil {
			t.Fatal(err)
		}
		var meta map[string]any
		json.NewDecoder(resp.Body).Decode(&meta)
		resp.Body.Close()
		if resp.StatusCode != 200 || meta["resource"] != o.Resource {
			t.Errorf("GET %s: %s %v", path, resp.Status, meta)
		}
	}
}

// TestOAuthSessionCapPerSubject: --max-sessions-per-token counts a
// subject's sessions, whichever of its tokens opened them.
func TestOAuthSessionCapPerSubject(t *testing.T) {
	t.Parallel()
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		subject := map[string]string{"jwt-alice": "alice", "jwt-alice-again": "alice", "jwt-bob": "bob"}[token]
		if subject == "" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: "https://idp.example.com " + subject, Expiration: time.Now().Add(time.Hour), Scopes: []string{"gemini"}}, nil
	}
	o := &OAuthOptions{Verify: verify, Resource: "https://mcp.example.com/mcp", Issuers: []string{"https://idp.example.com"}, Scopes: []string{"gemini"}}
	h := newHTTPHarness(t, HTTPOptions{OAuth: o, MaxSessionsPerToken: 1})
	if _, err := h.connect(t, "streamable", "jwt-alice", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := h.connect(t, "streamable", "jwt-alice-again", nil); err == nil {
		t.Error("a second session of the same subject, under another token, passed a cap of 1")
	}
	if _, err := h.connect(t, "streamable", "jwt-bob", nil); err != nil {
		t.Errorf("another subject: %v", err)
	}
}

// TestOAuthIssuerUnavailable: a token the server cannot check because its
// authorization server is unreachable (the JWKS of a JWT's issuer, the
// introspection endpoint of an opaque token) is answered 503
// "authorization server unavailable" with a Retry-After, naming neither
// the address nor the dial error, which go to the log.
func TestOAuthIssuerUnavailable(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gone := "http://" + ln.Addr().String()
	ln.Close()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: key}, (&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	jwtToken, err := jwt.Signed(signer).Claims(map[string]any{"iss": gone, "sub": "alice", "aud": "https://mcp.example.com/mcp", "exp": now + 600, "iat": now}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	v, err := oauth.New(oauth.Options{Issuers: []string{gone}, Audience: "https://mcp.example.com/mcp",
		Introspection: &oauth.Introspection{URL: gone + "/introspect", ClientID: "rs", ClientSecret: "rs-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	logs := &geminitest.LockedBuffer{}
	h := newHTTPHarness(t, HTTPOptions{Log: slog.New(slog.NewTextHandler(logs, nil)),
		OAuth: &OAuthOptions{Verify: v.Verify, Resource: "https://mcp.example.com/mcp", Issuers: []string{gone}}})
	for name, token := range map[string]string{"jwt": jwtToken, "opaque": "opaque-token"} {
		req, _ := http.NewRequest(http.MethodPost, h.url+PathMCP, strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusServiceUnavailable || strings.TrimSpace(string(body)) != "authorization server unavailable" || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%s token: %s, Retry-After %q, body %q; want 503 \"authorization server unavailable\"", name, resp.Status, resp.Header.Get("Retry-After"), body)
		}
	}
	if l := logs.String(); strings.Count(l, "the authorization server is unavailable") != 2 || !strings.Contains(l, ln.Addr().String()) {
		t.Errorf("the log does not hold the causes:\n%s", l)
	}
}

package server

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
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

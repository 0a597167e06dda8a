package interop

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// The client provider.mjs lets introspect tokens.
const (
	introspectorID     = "mcp-introspector"
	introspectorSecret = "mcp-introspector-secret-0123456789"
)

// format makes the provider issue opaque ("opaque") or JWT ("jwt") access
// tokens for resource.
func (p *oidcProvider) format(t *testing.T, resource, format string) {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"resource": resource, "format": format})
	req, _ := http.NewRequest(http.MethodPost, p.issuer+"/test/format", bytes.NewReader(b))
	var out struct{ Format string }
	p.do(t, req, &out)
}

// opaqueToken gets an opaque access token for resource as client.
func (p *oidcProvider) opaqueToken(t *testing.T, client, scope, resource string) string {
	t.Helper()
	tok := p.issue(t, client, scope, resource)
	if tok == "" || strings.Contains(tok, ".") {
		t.Fatalf("the provider's access token %q is not an opaque one", tok)
	}
	return tok
}

// revoke revokes token at the provider's revocation endpoint (RFC 7009),
// as client, the one it was issued to.
func (p *oidcProvider) revoke(t *testing.T, client, token string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.issuer+"/token/revocation", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(client, client+"-secret-0123456789")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("revoking a token: %s", resp.Status)
	}
}

// TestOAuthIntrospection runs the server as a resource server of a real
// OpenID provider (npm oidc-provider) that issues opaque access tokens:
// the server introspects them (RFC 7662) at the provider, as its own
// client, and accepts or refuses them by the answer, with the caller the
// same subject as the provider's JWTs name.
func TestOAuthIntrospection(t *testing.T) {
	needServer(t)
	n := tools(t)
	idp := startProvider(t, n)
	s := newServer(t, serverOpts{http: true, env: map[string]string{
		"GEMINI_MCP_AUTH_ISSUER":            idp.issuer,
		"GEMINI_MCP_AUTH_INTROSPECTION_URL": idp.issuer + "/token/introspection",
		"GEMINI_MCP_AUTH_CLIENT_ID":         introspectorID,
		"GEMINI_MCP_AUTH_CLIENT_SECRET":     introspectorSecret,
	}})
	resource := s.base + "/mcp"
	other := "http://127.0.0.1:1/mcp"
	idp.format(t, resource, "opaque")
	idp.format(t, other, "opaque")

	t.Run("valid", func(t *testing.T) {
		tok := idp.opaqueToken(t, "mcp-test", "gemini", resource)
		c := oauthClient(t, resource, tok)
		id := chatSession(t, c, "hello over an opaque token")
		// The caller is the token's issuer and subject, as for a JWT of
		// the same client: its sessions are that JWT's.
		idp.format(t, resource, "jwt")
		defer idp.format(t, resource, "opaque")
		jwt := oauthClient(t, resource, idp.token(t, "mcp-test", "gemini", resource))
		if text, _ := callText(t, jwt, "sessions", nil); !strings.Contains(text, id) {
			t.Errorf("sessions with a JWT of the same subject does not list %s:\n%s", id, text)
		}
		stranger := oauthClient(t, resource, idp.token(t, "mcp-other", "gemini", resource))
		if text, _ := callText(t, stranger, "sessions", nil); strings.Contains(text, id) {
			t.Errorf("sessions as another subject lists %s:\n%s", id, text)
		}
	})

	t.Run("refused", func(t *testing.T) {
		revoked := idp.opaqueToken(t, "mcp-test", "gemini", resource)
		idp.revoke(t, "mcp-test", revoked)
		for _, tc := range []struct {
			name, token string
			status      int
			why         string // in the body
		}{
			{"revoked", revoked, 401, "not active"},
			{"other_resource", idp.opaqueToken(t, "mcp-test", "gemini", other), 401, "aud"},
			// The provider's tokens for no resource have no aud.
			{"no_resource", idp.opaqueToken(t, "mcp-test", "gemini", ""), 401, "no aud"},
			{"unknown", "never-issued-0123456789abcdefghijklmnopq", 401, "not active"},
			{"missing_scope", idp.opaqueToken(t, "mcp-test", "other", resource), 403, "insufficient scope"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				resp, body := initialize(t, resource, tc.token, "")
				challenge := resp.Header.Get("WWW-Authenticate")
				wantErr := `error="invalid_token"`
				if tc.status == http.StatusForbidden {
					wantErr = `error="insufficient_scope"`
				}
				if resp.StatusCode != tc.status || !strings.Contains(body, tc.why) ||
					!strings.Contains(challenge, wantErr) || !strings.Contains(challenge, `resource_metadata="`) {
					t.Errorf("%s: %s %q, WWW-Authenticate %q; want %d with %q and a challenge with %s", tc.name, resp.Status, clip(body, 300), challenge, tc.status, tc.why, wantErr)
				}
			})
		}
	})

	s.stop(t)
	if log := s.stderr.String(); strings.Contains(log, introspectorSecret) {
		t.Errorf("the client secret is in the server's log:\n%s", log)
	}
}

package config

import (
	"io"
	"slices"
	"strings"
	"testing"
)

func TestAuthFlags(t *testing.T) {
	c, err := Parse("x", "", []string{"--http", "127.0.0.1:0"}, envOf(map[string]string{"GEMINI_MCP_AUTH_ISSUER": "https://a.example.com, https://b.example.com/realms/x"}), io.Discard, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.HTTP.AuthIssuers, []string{"https://a.example.com", "https://b.example.com/realms/x"}) || !slices.Equal(c.HTTP.AuthScopes, DefaultAuthScopes) {
		t.Errorf("issuers %q, scopes %q", c.HTTP.AuthIssuers, c.HTTP.AuthScopes)
	}
	if got := c.HTTP.Resource("127.0.0.1:8080"); got != "http://127.0.0.1:8080/mcp" {
		t.Errorf("default resource %q", got)
	}
	// A flag replaces the default scopes rather than adding to them.
	c, err = Parse("x", "", []string{"--http", "0.0.0.0:8080", "--auth-issuer", "https://a.example.com", "--auth-audience", "https://mcp.example.com/mcp",
		"--auth-scopes", "mcp", "--auth-scopes", "gemini.read"}, envOf(nil), io.Discard, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.HTTP.AuthScopes, []string{"mcp", "gemini.read"}) || c.HTTP.Resource("0.0.0.0:8080") != "https://mcp.example.com/mcp" {
		t.Errorf("scopes %q, resource %q", c.HTTP.AuthScopes, c.HTTP.Resource("0.0.0.0:8080"))
	}
	if !slices.Equal(DefaultAuthScopes, []string{"gemini"}) {
		t.Errorf("DefaultAuthScopes changed to %q", DefaultAuthScopes)
	}
}

func TestAuthFlagsInvalid(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--auth-issuer", "https://a.example.com"}, "needs --http"},
		{[]string{"--http", "127.0.0.1:0", "--auth-issuer", "http://a.example.com"}, "https"},
		{[]string{"--http", "127.0.0.1:0", "--auth-issuer", "https://a.example.com?x"}, "query"},
		{[]string{"--http", "0.0.0.0:8080", "--auth-issuer", "https://a.example.com"}, "needs --auth-audience"},
		{[]string{"--http", "127.0.0.1:0", "--auth-issuer", "https://a.example.com", "--auth-audience", "mcp.example.com"}, "--auth-audience"},
		{[]string{"--http", "127.0.0.1:0", "--auth-issuer", "https://a.example.com", "--auth-scopes", " , "}, "--auth-scopes"},
		{[]string{"--http", "127.0.0.1:0", "--auth-accept-audiences", "client-id"}, "--auth-accept-audiences needs --auth-issuer"},
		{[]string{"--http", "127.0.0.1:0", "--auth-issuer", "https://a.example.com", "--auth-accept-audiences", "two words"}, "one value without spaces"},
	} {
		_, err := Parse("x", "", c.args, envOf(nil), io.Discard, Rules{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want an error about %q", c.args, err, c.want)
		}
	}
}

func TestIntrospectionFlags(t *testing.T) {
	const secret = "introspection-secret-0123456789"
	env := map[string]string{
		"GEMINI_MCP_AUTH_ISSUER":            "https://a.example.com",
		"GEMINI_MCP_AUTH_INTROSPECTION_URL": "https://a.example.com/token/introspection",
		"GEMINI_MCP_AUTH_CLIENT_ID":         "mcp-server",
		"GEMINI_MCP_AUTH_CLIENT_SECRET":     secret,
	}
	c, err := Parse("x", "", []string{"--http", "127.0.0.1:0"}, envOf(env), io.Discard, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if h := c.HTTP; h.AuthIntrospectionURL != env["GEMINI_MCP_AUTH_INTROSPECTION_URL"] || h.AuthClientID != "mcp-server" || h.AuthClientSecret != secret {
		t.Errorf("introspection %q, client %q, secret set %v", h.AuthIntrospectionURL, h.AuthClientID, h.AuthClientSecret == secret)
	}
	c, err = Parse("x", "", []string{"--http", "127.0.0.1:0", "--auth-introspection-url", "http://127.0.0.1:9/introspect", "--auth-client-id", "other"}, envOf(env), io.Discard, Rules{})
	if err != nil || c.HTTP.AuthIntrospectionURL != "http://127.0.0.1:9/introspect" || c.HTTP.AuthClientID != "other" {
		t.Errorf("the flags over the variables: %v, %q %q", err, c.HTTP.AuthIntrospectionURL, c.HTTP.AuthClientID)
	}
	without := func(keys ...string) map[string]string {
		m := map[string]string{}
		for k, v := range env {
			if !slices.Contains(keys, k) {
				m[k] = v
			}
		}
		return m
	}
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, without("GEMINI_MCP_AUTH_CLIENT_SECRET"), "missing GEMINI_MCP_AUTH_CLIENT_SECRET"},
		{nil, without("GEMINI_MCP_AUTH_CLIENT_ID"), "missing --auth-client-id"},
		{nil, without("GEMINI_MCP_AUTH_INTROSPECTION_URL"), "missing --auth-introspection-url"},
		{nil, without("GEMINI_MCP_AUTH_INTROSPECTION_URL", "GEMINI_MCP_AUTH_CLIENT_ID"), "missing --auth-introspection-url, --auth-client-id"},
		{nil, without("GEMINI_MCP_AUTH_ISSUER"), "need --auth-issuer"},
		{nil, map[string]string{"GEMINI_MCP_AUTH_CLIENT_SECRET": secret}, "need --auth-issuer"},
		{[]string{"--auth-introspection-url", "http://a.example.com/introspect"}, env, "https"},
		{[]string{"--auth-introspection-url", "https://a.example.com/introspect?x=1"}, env, "query"},
	} {
		_, err := Parse("x", "", append([]string{"--http", "127.0.0.1:0"}, tc.args...), envOf(tc.env), io.Discard, Rules{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q, %d variables) = %v, want an error about %q", tc.args, len(tc.env), err, tc.want)
		} else if strings.Contains(err.Error(), secret) {
			t.Errorf("the secret is in %q", err)
		}
	}
	// The secret is no flag: argv is visible to other users.
	if _, err := Parse("x", "", []string{"--http", "127.0.0.1:0", "--auth-client-secret", secret}, envOf(env), io.Discard, Rules{}); err == nil {
		t.Error("--auth-client-secret accepted")
	}
}

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
	} {
		_, err := Parse("x", "", c.args, envOf(nil), io.Discard, Rules{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want an error about %q", c.args, err, c.want)
		}
	}
}

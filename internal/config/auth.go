package config

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"unicode"
)

// checkAuth checks the OAuth flags: the issuers and the audience are
// absolute URLs (https, or http on a loopback host), the scopes are not
// blank, and the default audience can be derived from --http.
func checkAuth(h *HTTP) error {
	if h.Addr == "" {
		return errors.New("--auth-issuer needs --http: OAuth applies to the HTTP transports")
	}
	for _, iss := range h.AuthIssuers {
		if err := CheckAuthURL(iss); err != nil {
			return fmt.Errorf("--auth-issuer %q: %w", iss, err)
		}
	}
	if h.AuthAudience != "" {
		if err := CheckAuthURL(h.AuthAudience); err != nil {
			return fmt.Errorf("--auth-audience %q: %w", h.AuthAudience, err)
		}
	} else if host, _, err := net.SplitHostPort(h.Addr); err == nil && !IsLoopbackHost(host) {
		return fmt.Errorf("--auth-issuer with --http %s needs --auth-audience: the URL clients reach this server at, e.g. https://mcp.example.com/mcp", h.Addr)
	}
	for _, a := range h.AuthAcceptAudiences {
		if strings.ContainsFunc(a, unicode.IsSpace) || len(a) > 512 {
			return fmt.Errorf("--auth-accept-audiences %.60q: an audience is one value without spaces, at most 512 bytes", a)
		}
	}
	if len(h.AuthScopes) == 0 {
		return errors.New("--auth-scopes must name at least one scope")
	}
	return checkIntrospection(h)
}

// checkIntrospection checks that introspection is set up whole or not at
// all: the endpoint, the client id and the secret (which no message
// shows).
func checkIntrospection(h *HTTP) error {
	if h.AuthIntrospectionURL == "" && h.AuthClientID == "" && h.AuthClientSecret == "" {
		return nil
	}
	if h.AuthIntrospectionURL == "" || h.AuthClientID == "" || h.AuthClientSecret == "" {
		var missing []string
		for _, m := range []struct{ name, v string }{
			{"--auth-introspection-url", h.AuthIntrospectionURL},
			{"--auth-client-id", h.AuthClientID},
			{"GEMINI_MCP_AUTH_CLIENT_SECRET", h.AuthClientSecret},
		} {
			if m.v == "" {
				missing = append(missing, m.name)
			}
		}
		return fmt.Errorf("token introspection needs --auth-introspection-url, --auth-client-id and GEMINI_MCP_AUTH_CLIENT_SECRET; missing %s", strings.Join(missing, ", "))
	}
	if err := CheckAuthURL(h.AuthIntrospectionURL); err != nil {
		return fmt.Errorf("--auth-introspection-url %q: %w", h.AuthIntrospectionURL, err)
	}
	return nil
}

// CheckAuthURL reports whether s can name an authorization server or this
// server's resource: an absolute https URL (http only on a loopback host),
// without query or fragment.
func CheckAuthURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	if u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return errors.New("want an absolute URL without query or fragment")
	}
	if u.Scheme != "https" && (u.Scheme != "http" || !IsLoopbackHost(u.Hostname())) {
		return errors.New("want https (http only on a loopback host)")
	}
	return nil
}

// IsLoopbackHost reports whether host (a name or an IP, without port) is
// this machine's loopback.
func IsLoopbackHost(host string) bool {
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Resource is this server's resource URI (RFC 8707) when it listens on
// addr (the listener's address, its port resolved): --auth-audience, else
// http://addr/mcp.
func (h HTTP) Resource(addr string) string {
	if h.AuthAudience != "" {
		return h.AuthAudience
	}
	return "http://" + addr + "/mcp"
}

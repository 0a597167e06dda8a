package mcphost

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
)

// How a remote server's requests are authorized (authProviderType), as
// the Gemini CLI names the ways.
const (
	// AuthDynamicDiscovery signs in with OAuth 2.1: on a 401 the server's
	// protected-resource metadata names the authorization server (or the
	// oauth settings give its endpoints). The default.
	AuthDynamicDiscovery = "dynamic_discovery"
	// AuthGoogleCredentials sends an access token of the Application
	// Default Credentials, for Google-hosted servers.
	AuthGoogleCredentials = "google_credentials"
	// AuthServiceAccountImpersonation sends an ID token of
	// targetServiceAccount for targetAudience, obtained with the
	// Application Default Credentials (IAM Credentials API).
	AuthServiceAccountImpersonation = "service_account_impersonation"
)

// OAuthConfig is mcpServers.<name>.oauth: the Gemini CLI's keys. Every
// field is optional: without them the host discovers the authorization
// server from the MCP server and registers itself as a client.
type OAuthConfig struct {
	// Enabled is the CLI's switch; the host signs in whenever a server
	// answers 401, so it only documents intent here.
	Enabled      bool   `json:"enabled"`
	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret"`
	// AuthorizationURL and TokenURL, given together, skip discovery.
	AuthorizationURL string   `json:"authorizationUrl"`
	TokenURL         string   `json:"tokenUrl"`
	Scopes           []string `json:"scopes"`
	Audiences        []string `json:"audiences"`
	// RedirectURI fixes the loopback callback of `mcp auth` (its port and
	// path); by default it is http://127.0.0.1:<free port>/oauth/callback.
	RedirectURI     string `json:"redirectUri"`
	RegistrationURL string `json:"registrationUrl"`
}

// oauthKeys are the keys of mcpServers.<name>.oauth.
var oauthKeys = []string{"enabled", "clientId", "clientSecret", "authorizationUrl", "tokenUrl", "scopes", "audiences", "redirectUri", "registrationUrl"}

// googleHosts are the hosts Google credentials are sent to, as in the
// Gemini CLI: a token of the user's Google account goes to Google only.
var googleHosts = []*regexp.Regexp{regexp.MustCompile(`^.+\.googleapis\.com$`), regexp.MustCompile(`^(.*\.)?luci\.app$`)}

// parseAuth reads oauth, authProviderType, targetAudience and
// targetServiceAccount into s (whose URL is parsed already).
func parseAuth(s *ServerConfig, fields map[string]json.RawMessage, lookup func(string) (string, bool), bad func(key, format string, args ...any) error) error {
	if v, ok := fields["authProviderType"]; ok {
		if err := json.Unmarshal(v, &s.AuthProvider); err != nil {
			return bad("authProviderType", "must be a string")
		}
		s.AuthProvider = expand(s.AuthProvider, lookup, true)
	}
	for _, f := range []struct {
		key string
		dst *string
	}{{"targetAudience", &s.TargetAudience}, {"targetServiceAccount", &s.TargetServiceAccount}} {
		if v, ok := fields[f.key]; ok {
			if err := json.Unmarshal(v, f.dst); err != nil {
				return bad(f.key, "must be a string")
			}
			*f.dst = expand(*f.dst, lookup, true)
		}
	}
	if v, ok := fields["oauth"]; ok && strings.TrimSpace(string(v)) != "null" {
		// Keys are matched exactly, as JavaScript reads them (Go's JSON
		// decoding would take "clientID" for clientId).
		var keys map[string]json.RawMessage
		var o OAuthConfig
		if err := json.Unmarshal(v, &keys); err != nil || keys == nil {
			return bad("oauth", "must be an object of %s", strings.Join(oauthKeys, ", "))
		}
		for k := range keys {
			if !slices.Contains(oauthKeys, k) {
				return bad("oauth", "must be an object of %s; %q is none of them", strings.Join(oauthKeys, ", "), k)
			}
		}
		if err := json.Unmarshal(v, &o); err != nil {
			return bad("oauth", "must be an object of %s (%v)", strings.Join(oauthKeys, ", "), err)
		}
		// The CLI expands $VAR in the whole settings file.
		for _, p := range []*string{&o.ClientID, &o.ClientSecret, &o.AuthorizationURL, &o.TokenURL, &o.RedirectURI, &o.RegistrationURL} {
			*p = expand(*p, lookup, true)
		}
		for _, list := range [][]string{o.Scopes, o.Audiences} {
			for i := range list {
				list[i] = expand(list[i], lookup, true)
			}
		}
		for _, u := range []struct{ key, val string }{{"authorizationUrl", o.AuthorizationURL}, {"tokenUrl", o.TokenURL}, {"registrationUrl", o.RegistrationURL}} {
			if u.val == "" {
				continue
			}
			if p, err := url.Parse(u.val); err != nil || (p.Scheme != "https" && p.Scheme != "http") || p.Host == "" {
				return bad("oauth."+u.key, "must be an https:// URL, not %q", u.val)
			}
		}
		if (o.AuthorizationURL == "") != (o.TokenURL == "") {
			return bad("oauth", "authorizationUrl and tokenUrl go together: give both (and the client with clientId, or registrationUrl), or neither to discover them from the server")
		}
		if o.RedirectURI != "" {
			p, err := url.Parse(o.RedirectURI)
			if err != nil || p.Scheme != "http" || !config.IsLoopbackHost(p.Hostname()) {
				return bad("oauth.redirectUri", "must be an http:// URL on localhost, 127.0.0.1 or [::1], where `mcp auth` listens for the authorization server's redirect; not %q", o.RedirectURI)
			}
		}
		s.OAuth = &o
	}
	remote := s.Endpoint() != ""
	switch s.AuthProvider {
	case "", AuthDynamicDiscovery:
		s.AuthProvider = AuthDynamicDiscovery
	case AuthGoogleCredentials:
		if !remote {
			return bad("authProviderType", "%s needs url or httpUrl", s.AuthProvider)
		}
		if !googleHost(s.Endpoint()) {
			return bad("authProviderType", "google_credentials sends your Google credentials, so only to *.googleapis.com and *.luci.app servers (as the Gemini CLI); %s is neither", hostOf(s.Endpoint()))
		}
		if s.OAuth == nil || len(s.OAuth.Scopes) == 0 {
			return bad("oauth.scopes", "google_credentials needs the scopes of the token to ask for, e.g. [\"https://www.googleapis.com/auth/cloud-platform\"]")
		}
	case AuthServiceAccountImpersonation:
		if !remote {
			return bad("authProviderType", "%s needs url or httpUrl", s.AuthProvider)
		}
		if s.TargetAudience == "" || s.TargetServiceAccount == "" {
			return bad("authProviderType", "service_account_impersonation needs targetAudience (the OAuth client ID the server expects) and targetServiceAccount (the e-mail of the account to impersonate)")
		}
	default:
		return bad("authProviderType", "must be dynamic_discovery, google_credentials or service_account_impersonation, not %q", s.AuthProvider)
	}
	return nil
}

func googleHost(raw string) bool {
	h := hostOf(raw)
	for _, re := range googleHosts {
		if re.MatchString(h) {
			return true
		}
	}
	return false
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return strings.ToLower(u.Hostname())
}

// SignInCommand is the command that signs the host in to server name.
func SignInCommand(name string) string {
	return fmt.Sprintf("gemini-mcp-server mcp auth %s", name)
}

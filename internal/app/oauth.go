package app

import (
	"log/slog"
	"strings"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/oauth"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/server"
)

// oauthOptions makes the server a resource server of cfg's issuers when
// it names any (nil otherwise); addr is the listener's address, from which
// the default resource URI comes.
func oauthOptions(cfg *config.Config, addr string, log *slog.Logger) (*server.OAuthOptions, error) {
	if len(cfg.HTTP.AuthIssuers) == 0 {
		return nil, nil
	}
	resource := cfg.HTTP.Resource(addr)
	v, err := oauth.New(oauth.Options{Issuers: cfg.HTTP.AuthIssuers, Audience: resource, AlsoAudiences: cfg.HTTP.AuthAcceptAudiences, Log: log, Introspection: introspection(cfg.HTTP)})
	if err != nil {
		return nil, err
	}
	log.Info("accepting OAuth access tokens", "issuers", strings.Join(cfg.HTTP.AuthIssuers, ","), "resource", resource, "scopes", strings.Join(cfg.HTTP.AuthScopes, " "),
		"introspection", cfg.HTTP.AuthIntrospectionURL, "introspectionClient", cfg.HTTP.AuthClientID)
	return &server.OAuthOptions{Verify: v.Verify, Resource: resource, Issuers: cfg.HTTP.AuthIssuers, Scopes: cfg.HTTP.AuthScopes, ClockSkew: oauth.ClockSkew}, nil
}

// introspection is the introspection endpoint of h, nil when it names
// none.
func introspection(h config.HTTP) *oauth.Introspection {
	if h.AuthIntrospectionURL == "" {
		return nil
	}
	return &oauth.Introspection{URL: h.AuthIntrospectionURL, ClientID: h.AuthClientID, ClientSecret: h.AuthClientSecret}
}

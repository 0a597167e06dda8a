package mcphost

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/redact"
)

// expiryMargin is how long before its expiry an access token is
// refreshed, so that it does not expire on the way.
const expiryMargin = time.Minute

// forcedRefreshInterval is the least time between two refreshes that 401s
// ask for.
const forcedRefreshInterval = time.Minute

// Caps of the scopes a server's challenge may add to the next sign-in.
const (
	maxWantedScopes = 32
	maxScopeBytes   = 256
)

// NeedsSignInError says that a server asks for a sign-in that only a user
// at a browser can give: `gemini-mcp-server mcp auth <name>`.
type NeedsSignInError struct {
	Server string
	Why    string
}

func (e *NeedsSignInError) Error() string {
	s := fmt.Sprintf("MCP server %q needs sign-in: run `%s`", e.Server, SignInCommand(e.Server))
	if e.Why != "" {
		s += " (" + e.Why + ")"
	}
	return s
}

// serverAuth authorizes the requests of one remote server. Without a
// browser (the running server) it sends the token kept for the server,
// refreshes it, and otherwise reports that the server needs a sign-in;
// with one (`mcp auth`) a 401 starts the authorization code flow.
type serverAuth struct {
	cfg    ServerConfig
	store  TokenStore
	oc     *oauthClient
	http   *http.Client
	red    *redact.Redactor
	log    *slog.Logger
	signIn *signIn            // nil without a browser
	source oauth2.TokenSource // the Google providers' tokens
	now    func() time.Time
	mu     sync.Mutex
	tok    *Token
	prior  *Token // with a browser: the token kept before this sign-in
	loaded bool
	needs  *NeedsSignInError
	forced time.Time // the last refresh a 401 asked for
	// signInErr is why the last sign-in (with a browser) failed: the
	// connection then fails with it, and is not tried another way.
	signInErr error
}

func newServerAuth(cfg ServerConfig, store TokenStore, red *redact.Redactor, log *slog.Logger) *serverAuth {
	oc := newOAuthClient(cfg.Endpoint())
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &serverAuth{cfg: cfg, store: store, oc: oc, http: oc.HTTP(), red: red, log: log, now: time.Now}
}

// needsSignIn is the reason the server waits for a sign-in, or nil.
func (a *serverAuth) needsSignIn() *NeedsSignInError {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.needs
}

// signInFailed is why the last sign-in failed, or nil.
func (a *serverAuth) signInFailed() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.signInErr
}

// current returns the access token to send ("" for none).
func (a *serverAuth) current(ctx context.Context) (string, error) {
	if a.google() {
		src, err := a.googleSource(ctx)
		if err != nil {
			return "", err
		}
		t, err := src.Token()
		if err != nil {
			return "", fmt.Errorf("%s credentials: %w", a.cfg.AuthProvider, err)
		}
		a.red.Add(t.AccessToken)
		return t.AccessToken, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.loadLocked(ctx); err != nil {
		return "", err
	}
	if a.tok == nil {
		return "", nil
	}
	if !a.tok.Expiry.IsZero() && a.now().Add(expiryMargin).After(a.tok.Expiry) && a.tok.RefreshToken != "" {
		if err := a.refreshLocked(ctx); err != nil {
			return "", err
		}
	}
	return a.tok.AccessToken, nil
}

// loadLocked reads the kept token once; a token another process keeps
// later (a sign-in) is read when the server answers 401.
func (a *serverAuth) loadLocked(ctx context.Context) error {
	if a.loaded {
		return nil
	}
	t, err := a.store.Load(ctx, a.cfg.Endpoint())
	if err != nil {
		return fmt.Errorf("reading the kept OAuth token: %w", err)
	}
	a.loaded = true
	if a.signIn != nil {
		// `mcp auth` signs in anew, asking for the scopes the kept token
		// has and those the server asked for since.
		a.prior = t
		return nil
	}
	a.setLocked(t)
	return nil
}

func (a *serverAuth) setLocked(t *Token) {
	a.tok = t
	if t != nil {
		a.red.Add(t.AccessToken, t.RefreshToken, t.ClientSecret)
	}
}

// unauthorized handles a 401, or a 403 for insufficient scope, to a
// request sent with the access token sent; it closes res. It returns
// whether to send the request again (with current's token).
func (a *serverAuth) unauthorized(ctx context.Context, req *http.Request, res *http.Response, sent string) (bool, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	defer res.Body.Close()
	if a.google() {
		io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
		return false, fmt.Errorf("the server refused the %s token (HTTP %d)", a.cfg.AuthProvider, res.StatusCode)
	}
	// A token kept since (by another request, or by `mcp auth` in another
	// process) may be the answer.
	if a.tok != nil && a.tok.AccessToken != sent {
		return true, nil
	}
	if a.signIn == nil {
		if t, err := a.store.Load(ctx, a.cfg.Endpoint()); err == nil && t != nil && t.AccessToken != sent {
			a.loaded = true
			a.setLocked(t)
			a.needs = nil
			return true, nil
		}
	}
	scope := res.StatusCode == http.StatusForbidden
	if !scope && a.tok != nil && a.tok.RefreshToken != "" && a.now().Sub(a.forced) >= forcedRefreshInterval {
		// The access token may have been revoked alone. A server that
		// refuses fresh tokens too gets no more than one refresh a
		// minute, not one for each request.
		a.forced = a.now()
		if err := a.refreshLocked(ctx); err == nil {
			return true, nil
		} else if a.needs == nil {
			return false, err
		}
	}
	if a.signIn == nil {
		io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
		why := "the server answered 401"
		if scope {
			wanted := challengeScopes(res)
			why = fmt.Sprintf("the server asks for the scopes %.200q, more than the kept token has", strings.Join(wanted, " "))
			if a.tok != nil && len(wanted) > 0 {
				a.tok.Wanted = union(a.tok.Wanted, wanted)
				a.tok.Wanted = a.tok.Wanted[:min(len(a.tok.Wanted), maxWantedScopes)]
				if err := a.store.Save(ctx, a.tok); err != nil {
					a.log.Warn("MCP server: keeping the scopes the server asks for failed", "error", err)
				}
			}
		}
		a.needs = &NeedsSignInError{Server: a.cfg.Name, Why: why}
		return false, a.needs
	}
	if a.signInErr != nil {
		// The sign-in failed: that is the answer, to this connection's
		// other requests (its close, a fallback's) too, not another one.
		io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
		return false, a.signInErr
	}
	t, err := a.signIn.authorize(ctx, a, req, res)
	a.signInErr = err
	if err != nil {
		return false, err
	}
	a.loaded = true
	a.setLocked(t)
	a.needs = nil
	return true, nil
}

// tokenAnswer is a token endpoint's answer (RFC 6749 §5.1).
type tokenAnswer struct {
	AccessToken  string          `json:"access_token"`
	TokenType    string          `json:"token_type"`
	ExpiresIn    json.RawMessage `json:"expires_in"`
	RefreshToken string          `json:"refresh_token"`
	Scope        string          `json:"scope"`
}

func (t *tokenAnswer) check() error {
	if t.AccessToken == "" {
		return errors.New("the token endpoint's answer has no access_token")
	}
	if t.TokenType != "" && !strings.EqualFold(t.TokenType, "bearer") {
		return fmt.Errorf("the token endpoint gave a %.20q token; only bearer tokens are used", t.TokenType)
	}
	return nil
}

// apply puts the answer into t: a refresh answer without a refresh token
// keeps the old one (RFC 6749 §6).
func (t *tokenAnswer) apply(dst *Token, now time.Time) {
	dst.AccessToken, dst.TokenType = t.AccessToken, "Bearer"
	if t.RefreshToken != "" {
		dst.RefreshToken = t.RefreshToken
	}
	if t.Scope != "" {
		dst.Scopes = strings.Fields(t.Scope)
	}
	dst.Expiry = time.Time{}
	if s := strings.Trim(string(t.ExpiresIn), `"`); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n > 0 && n < 10*365*24*3600 {
			dst.Expiry = now.Add(time.Duration(n) * time.Second)
		}
	}
	dst.Updated = now
}

// tokenFromOAuth2 is the kept form of a token the SDK's flow obtained.
func tokenFromOAuth2(server, issuer string, cfg *oauth2.Config, t *oauth2.Token, now time.Time) *Token {
	method := "none"
	switch {
	case cfg.ClientSecret == "":
	case cfg.Endpoint.AuthStyle == oauth2.AuthStyleInParams:
		method = "client_secret_post"
	default:
		method = "client_secret_basic"
	}
	out := &Token{
		Server: server, Issuer: issuer,
		ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, AuthMethod: method, TokenURL: cfg.Endpoint.TokenURL,
		Scopes:      cfg.Scopes,
		AccessToken: t.AccessToken, TokenType: "Bearer", RefreshToken: t.RefreshToken, Expiry: t.Expiry, Updated: now,
	}
	if s, ok := t.Extra("scope").(string); ok && s != "" {
		out.Scopes = strings.Fields(s)
	}
	return out
}

// randomState is an unguessable state for an authorization request.
func randomState() string { return rand.Text() }

// newAuth is how the host authorizes a server's requests: nil for stdio
// and for a server whose headers hold an Authorization. A configuration
// the provider cannot use is the server's failure, not the host's.
func (h *Host) newAuth(c ServerConfig) (*serverAuth, error) {
	if c.Endpoint() == "" {
		return nil, nil
	}
	for k := range c.Headers {
		if strings.EqualFold(k, "Authorization") {
			return nil, nil
		}
	}
	a := newServerAuth(c, h.opts.Tokens, h.red, h.log.With("mcp_server", c.Name))
	if a.google() {
		return a, nil
	}
	if h.opts.Browser != nil {
		si, err := newSignIn(c, h.opts.Browser, h.opts.ClientMetadataURL, h.log.With("mcp_server", c.Name))
		if err != nil {
			return a, err
		}
		a.signIn = si
	}
	return a, nil
}

// google reports a Google provider, whose tokens come from the
// Application Default Credentials rather than a sign-in.
func (a *serverAuth) google() bool {
	return a.cfg.AuthProvider == AuthGoogleCredentials || a.cfg.AuthProvider == AuthServiceAccountImpersonation
}

// googleSource is the Google provider's token source, found on first use
// (in the background, not while the host starts: finding the credentials
// may ask the cloud metadata server).
func (a *serverAuth) googleSource(ctx context.Context) (oauth2.TokenSource, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.source == nil {
		src, err := googleSource(ctx, a.cfg)
		if err != nil {
			return nil, err
		}
		a.source = src
	}
	return a.source, nil
}

// needsSignIn is why the server waits for a sign-in, or nil.
func (s *server) needsSignIn() *NeedsSignInError {
	if s.auth == nil {
		return nil
	}
	return s.auth.needsSignIn()
}

// Unavailable implements backend.ToolExplainer: a tool of a server that
// waits for a sign-in is unavailable until `mcp auth` signs it in.
func (h *Host) Unavailable(name string) error {
	if w := h.waitingFor(name); w != "" {
		return &NeedsSignInError{Server: w}
	}
	return nil
}

// waitingFor names the server waiting for a sign-in whose tools the
// name would be one of (mcp_<server>_<tool>), or "".
func (h *Host) waitingFor(name string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.servers {
		if s.state == StateNeedsSignIn && strings.HasPrefix(name, ToolName(s.cfg.Name, "")) {
			return s.cfg.Name
		}
	}
	return ""
}

// challengeScopes are the scopes a Bearer challenge of res names.
func challengeScopes(res *http.Response) []string {
	cs, err := oauthex.ParseWWWAuthenticate(res.Header.Values("WWW-Authenticate"))
	if err != nil {
		return nil
	}
	for _, c := range cs {
		if c.Scheme == "bearer" && c.Params["scope"] != "" {
			var out []string
			for _, s := range strings.Fields(c.Params["scope"]) {
				if len(s) <= maxScopeBytes && len(out) < maxWantedScopes {
					out = append(out, s)
				}
			}
			return out
		}
	}
	return nil
}

// union is a's scopes and then those of b it lacks, in order.
func union(a []string, bs ...[]string) []string {
	out := slices.Clone(a)
	for _, b := range bs {
		for _, s := range b {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	return out
}

// scopesToAsk are the scopes a sign-in asks for: oauth.scopes when set,
// else those the server named; and in both cases the scopes of the token
// this sign-in replaces, and those the server asked for since.
func (a *serverAuth) scopesToAsk(discovered []string) []string {
	base := discovered
	if a.cfg.OAuth != nil && len(a.cfg.OAuth.Scopes) > 0 {
		base = a.cfg.OAuth.Scopes
	}
	for _, t := range []*Token{a.prior, a.tok} {
		if t != nil {
			base = union(base, t.Scopes, t.Wanted)
		}
	}
	return base
}

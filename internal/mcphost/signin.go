package mcphost

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// SignInTimeout is how long `mcp auth` waits for the browser to come back
// to its callback, as long as the Gemini CLI waits.
const SignInTimeout = 5 * time.Minute

// DefaultCallbackPath is the callback's path when oauth.redirectUri does
// not give one.
const DefaultCallbackPath = "/oauth/callback"

// ClientName is the name the host registers itself under (RFC 7591).
const ClientName = "gemini-mcp-server"

// Browser shows the user an authorization URL (prints it, opens a
// browser); the authorization server then redirects the browser to the
// host's loopback callback.
type Browser func(ctx context.Context, authURL string) error

// signIn is the browser step of one server's sign-in: a loopback callback
// listening from the start of `mcp auth` until the host closes.
type signIn struct {
	cfg      ServerConfig
	metadata string // the Client ID Metadata Document's URL, or ""
	browser  Browser
	redirect string
	srv      *http.Server
	results  chan callbackResult
	closeOne sync.Once
}

type callbackResult struct {
	code, state, iss string
	err              error
}

// newSignIn listens on the callback: the port and path of
// oauth.redirectUri, else a free port on 127.0.0.1.
func newSignIn(cfg ServerConfig, browser Browser, metadata string) (*signIn, error) {
	host, port, path := "127.0.0.1", "0", DefaultCallbackPath
	if cfg.OAuth != nil && cfg.OAuth.RedirectURI != "" {
		u, err := url.Parse(cfg.OAuth.RedirectURI)
		if err != nil {
			return nil, err
		}
		host = u.Hostname()
		if host == "localhost" {
			host = "127.0.0.1"
		}
		if p := u.Port(); p != "" {
			port = p
		}
		if u.Path != "" {
			path = u.Path
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("listening for the sign-in's callback: %w", err)
	}
	redirect := cfg.OAuth.redirectURI()
	_, actualPort, _ := net.SplitHostPort(ln.Addr().String())
	if redirect == "" {
		redirect = "http://" + net.JoinHostPort(host, actualPort) + path
	} else if port == "0" {
		u, _ := url.Parse(redirect)
		u.Host = net.JoinHostPort(u.Hostname(), actualPort)
		redirect = u.String()
	}
	s := &signIn{cfg: cfg, metadata: metadata, browser: browser, redirect: redirect, results: make(chan callbackResult, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc(path, s.callback)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 64 << 10}
	go s.srv.Serve(ln)
	return s, nil
}

func (o *OAuthConfig) redirectURI() string {
	if o == nil {
		return ""
	}
	return o.RedirectURI
}

func (s *signIn) close() {
	s.closeOne.Do(func() { s.srv.Close() })
}

// callback takes the authorization server's redirect; the first one
// counts.
func (s *signIn) callback(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	res := callbackResult{code: q.Get("code"), state: q.Get("state"), iss: q.Get("iss")}
	msg := "Signed in: you can close this tab and go back to gemini-mcp-server."
	if e := q.Get("error"); e != "" {
		res.err = fmt.Errorf("the authorization server refused: %s %s", shorten(e, 64), shorten(q.Get("error_description"), 200))
		msg = "Sign-in failed: " + res.err.Error()
	} else if res.code == "" {
		res.err = errors.New("the authorization server's redirect has no code")
		msg = "Sign-in failed: " + res.err.Error()
	}
	select {
	case s.results <- res:
	default:
		msg = "This sign-in is over already."
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!doctype html><title>gemini-mcp-server</title><p>%s</p>\n", html.EscapeString(msg))
}

// code shows authURL and waits for the callback, within SignInTimeout.
func (s *signIn) code(ctx context.Context, authURL string) (callbackResult, error) {
	ctx, cancel := context.WithTimeout(ctx, SignInTimeout)
	defer cancel()
	if err := s.browser(ctx, authURL); err != nil {
		return callbackResult{}, err
	}
	select {
	case res := <-s.results:
		return res, res.err
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return callbackResult{}, fmt.Errorf("no sign-in came back to %s within %s", s.redirect, SignInTimeout)
		}
		return callbackResult{}, ctx.Err()
	}
}

// authorize runs the authorization code flow after res (a 401 or a 403
// for insufficient scope) and returns the token to keep.
func (s *signIn) authorize(ctx context.Context, a *serverAuth, req *http.Request, res *http.Response) (*Token, error) {
	if o := s.cfg.OAuth; o != nil && o.AuthorizationURL != "" {
		res.Body.Close()
		return s.explicit(ctx, a)
	}
	var got *Token
	hc := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: s.redirect,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			r, err := s.code(ctx, args.URL)
			if err != nil {
				return nil, err
			}
			return &auth.AuthorizationResult{Code: r.code, State: r.state, Iss: r.iss}, nil
		},
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: s.registration()},
		RequestRefreshToken:             true,
		Client:                          a.http,
		NewTokenSource: func(_ context.Context, cfg *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			issuer := a.oc.Issuer()
			if issuer == "" {
				issuer = originOf(cfg.Endpoint.AuthURL)
			}
			got = tokenFromOAuth2(a.cfg.Endpoint(), issuer, cfg, t, a.now())
			return oauth2.StaticTokenSource(t), nil
		},
	}
	if s.metadata != "" {
		hc.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: s.metadata}
	}
	if o := s.cfg.OAuth; o != nil {
		if o.ClientID != "" {
			hc.PreregisteredClient = &oauthex.ClientCredentials{ClientID: o.ClientID}
			if o.ClientSecret != "" {
				hc.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}
			}
		}
	}
	hc.ScopeFilter = a.scopesToAsk
	h, err := auth.NewAuthorizationCodeHandler(hc)
	if err != nil {
		res.Body.Close()
		return nil, err
	}
	if err := h.Authorize(ctx, req, res); err != nil {
		return nil, fmt.Errorf("signing in: %s", a.red.String(err.Error()))
	}
	if got == nil {
		return nil, errors.New("signing in: the authorization server gave no token")
	}
	return got, nil
}

// registration is the host's client metadata for dynamic registration:
// a public native client, as the Gemini CLI registers.
func (s *signIn) registration() *oauthex.ClientRegistrationMetadata {
	m := &oauthex.ClientRegistrationMetadata{
		RedirectURIs:            []string{s.redirect},
		ClientName:              ClientName,
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		TokenEndpointAuthMethod: "none",
	}
	if o := s.cfg.OAuth; o != nil {
		m.Scope = strings.Join(o.Scopes, " ")
	}
	return m
}

// explicit is the flow on the endpoints oauth gives (no discovery): the
// client is oauth.clientId, or registers at oauth.registrationUrl.
func (s *signIn) explicit(ctx context.Context, a *serverAuth) (*Token, error) {
	o := s.cfg.OAuth
	cfg := &oauth2.Config{
		ClientID: o.ClientID, ClientSecret: o.ClientSecret, RedirectURL: s.redirect, Scopes: a.scopesToAsk(nil),
		Endpoint: oauth2.Endpoint{AuthURL: o.AuthorizationURL, TokenURL: o.TokenURL},
	}
	for _, u := range []string{o.AuthorizationURL, o.TokenURL} {
		pu, _ := url.Parse(u)
		if err := a.oc.checkURL(pu); err != nil {
			return nil, fmt.Errorf("mcpServers.%s.oauth: %w", s.cfg.Name, err)
		}
	}
	if cfg.ClientID == "" {
		if o.RegistrationURL == "" {
			return nil, fmt.Errorf("mcpServers.%s.oauth: with authorizationUrl and tokenUrl, give clientId (a client registered with the authorization server) or registrationUrl", s.cfg.Name)
		}
		reg, err := oauthex.RegisterClient(ctx, o.RegistrationURL, s.registration(), a.http)
		if err != nil {
			return nil, fmt.Errorf("registering the client: %s", a.red.String(err.Error()))
		}
		cfg.ClientID, cfg.ClientSecret = reg.ClientID, reg.ClientSecret
		a.red.Add(reg.ClientSecret)
	}
	if cfg.ClientSecret != "" {
		cfg.Endpoint.AuthStyle = oauth2.AuthStyleInHeader
	}
	verifier, state := oauth2.GenerateVerifier(), randomState()
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", s.cfg.Endpoint())}
	if len(o.Audiences) > 0 {
		opts = append(opts, oauth2.SetAuthURLParam("audience", strings.Join(o.Audiences, " ")))
	}
	r, err := s.code(ctx, cfg.AuthCodeURL(state, opts...))
	if err != nil {
		return nil, err
	}
	if r.state != state {
		return nil, errors.New("signing in: the redirect's state is not the one sent (a forged or stale redirect)")
	}
	issuer := originOf(o.AuthorizationURL)
	if r.iss != "" {
		if !sameIssuer(r.iss, issuer) {
			return nil, fmt.Errorf("signing in: the redirect names the issuer %.100q, not the authorization server %s", r.iss, issuer)
		}
		issuer = r.iss
	}
	cctx := context.WithValue(ctx, oauth2.HTTPClient, a.http)
	t, err := cfg.Exchange(cctx, r.code, oauth2.VerifierOption(verifier), oauth2.SetAuthURLParam("resource", s.cfg.Endpoint()))
	if err != nil {
		return nil, fmt.Errorf("exchanging the code for a token: %s", a.red.String(err.Error()))
	}
	return tokenFromOAuth2(s.cfg.Endpoint(), issuer, cfg, t, a.now()), nil
}

// originOf is a URL's scheme://host[:port].
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Scheme + "://" + u.Host
}

// sameIssuer compares issuer identifiers, a trailing slash aside.
func sameIssuer(a, b string) bool {
	return strings.TrimSuffix(a, "/") == strings.TrimSuffix(b, "/")
}

package mcphost

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"html"
	"log/slog"
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
	log      *slog.Logger
	redirect string
	addr     net.Addr // where the callback listens: always loopback
	srv      *http.Server
	results  chan callbackResult
	closeOne sync.Once
	mu       sync.Mutex
	state    string // the state of the authorization request shown
}

type callbackResult struct {
	code, state, iss string
	err              error
	// verdict takes the sign-in's outcome, which the browser's page
	// shows: nil once the code gave a token kept.
	verdict chan<- error
}

// verdictTimeout bounds the wait of the callback's page for the outcome
// of the token exchange.
const verdictTimeout = 2 * time.Minute

// newSignIn listens on the callback: the port and path of
// oauth.redirectUri, else a free port, always on loopback (127.0.0.1, or
// ::1 when the redirect names it): the redirect URI's host is what the
// browser is sent to, never where the callback listens.
func newSignIn(cfg ServerConfig, browser Browser, metadata string, log *slog.Logger) (*signIn, error) {
	host, port, path := "127.0.0.1", "0", DefaultCallbackPath
	if cfg.OAuth != nil && cfg.OAuth.RedirectURI != "" {
		u, err := url.Parse(cfg.OAuth.RedirectURI)
		if err != nil {
			return nil, err
		}
		if ip := net.ParseIP(u.Hostname()); ip != nil && ip.Equal(net.IPv6loopback) {
			host = "::1"
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
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &signIn{cfg: cfg, metadata: metadata, browser: browser, log: log, redirect: redirect, addr: ln.Addr(), results: make(chan callbackResult, 1)}
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

// callback takes the authorization server's redirect. One that does not
// carry the state of the authorization request shown (forged, or a stale
// tab's) is refused, and the sign-in goes on waiting for the real one;
// the first that does counts, and its page says how the sign-in ended
// (the token exchange included).
func (s *signIn) callback(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	page := func(status int, msg string) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(status)
		fmt.Fprintf(w, "<!doctype html><title>gemini-mcp-server</title><p>%s</p>\n", html.EscapeString(msg))
	}
	if !s.expected(q.Get("state")) {
		s.log.Warn("mcp auth: a redirect to the sign-in's callback was refused: its state is not the one of the authorization request (forged, or of an older sign-in); still waiting for the browser")
		page(http.StatusBadRequest, "Sign-in failed: this redirect does not belong to the sign-in in progress (its state is not the one sent). The sign-in is still waiting: finish it from the URL gemini-mcp-server printed.")
		return
	}
	verdict := make(chan error, 1)
	res := callbackResult{code: q.Get("code"), state: q.Get("state"), iss: q.Get("iss"), verdict: verdict}
	if e := q.Get("error"); e != "" {
		res.err = fmt.Errorf("the authorization server refused: %s %s", shorten(e, 64), shorten(q.Get("error_description"), 200))
	} else if res.code == "" {
		res.err = errors.New("the authorization server's redirect has no code")
	}
	select {
	case s.results <- res:
	default:
		page(http.StatusConflict, "This sign-in is over already.")
		return
	}
	t := time.NewTimer(verdictTimeout)
	defer t.Stop()
	var err error
	select {
	case err = <-verdict:
	case <-t.C:
		err = errors.New("the sign-in did not finish in time")
	case <-r.Context().Done():
		return
	}
	if err != nil {
		page(http.StatusBadRequest, "Sign-in failed: "+shorten(err.Error(), 500))
		return
	}
	page(http.StatusOK, "Signed in: you can close this tab and go back to gemini-mcp-server.")
}

// expected reports whether state is the one of the authorization request
// shown.
func (s *signIn) expected(state string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state != "" && subtle.ConstantTimeCompare([]byte(state), []byte(s.state)) == 1
}

// code shows authURL and waits for the callback, within SignInTimeout.
// The caller hands the sign-in's outcome to the result's verdict.
func (s *signIn) code(ctx context.Context, authURL string) (callbackResult, error) {
	ctx, cancel := context.WithTimeout(ctx, SignInTimeout)
	defer cancel()
	u, err := url.Parse(authURL)
	if err != nil || u.Query().Get("state") == "" {
		return callbackResult{}, errors.New("signing in: the authorization request has no state")
	}
	s.mu.Lock()
	s.state = u.Query().Get("state")
	s.mu.Unlock()
	if err := s.browser(ctx, authURL); err != nil {
		return callbackResult{}, err
	}
	select {
	case res := <-s.results:
		return res, nil
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return callbackResult{}, fmt.Errorf("no sign-in came back to %s within %s", s.redirect, SignInTimeout)
		}
		return callbackResult{}, ctx.Err()
	}
}

// authorize runs the authorization code flow after res (a 401 or a 403
// for insufficient scope), keeps the token and returns it. The browser's
// page, and the error, say how it ended.
func (s *signIn) authorize(ctx context.Context, a *serverAuth, req *http.Request, res *http.Response) (got *Token, err error) {
	var verdict chan<- error // the callback's, once it came
	defer func() {
		if verdict != nil {
			verdict <- err
		}
	}()
	callback := func(ctx context.Context, authURL string) (callbackResult, error) {
		r, err := s.code(ctx, authURL)
		if err != nil {
			return r, err
		}
		verdict = r.verdict
		return r, r.err
	}
	if o := s.cfg.OAuth; o != nil && o.AuthorizationURL != "" {
		res.Body.Close()
		got, err = s.explicit(ctx, a, callback)
	} else {
		got, err = s.discovered(ctx, a, req, res, callback)
	}
	if err != nil {
		return nil, err
	}
	if err := a.store.Save(ctx, got); err != nil {
		return nil, fmt.Errorf("keeping the OAuth token: %w", err)
	}
	return got, nil
}

// discovered is the flow on the endpoints the server's metadata names,
// the client registered as the configuration says.
func (s *signIn) discovered(ctx context.Context, a *serverAuth, req *http.Request, res *http.Response, callback func(context.Context, string) (callbackResult, error)) (*Token, error) {
	var got *Token
	hc := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: s.redirect,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			r, err := callback(ctx, args.URL)
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
func (s *signIn) explicit(ctx context.Context, a *serverAuth, callback func(context.Context, string) (callbackResult, error)) (*Token, error) {
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
	r, err := callback(ctx, cfg.AuthCodeURL(state, opts...))
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

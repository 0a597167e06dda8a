// Package oauth makes the HTTP server an OAuth 2.1 resource server: it
// discovers each trusted issuer's metadata (RFC 8414, OpenID Connect
// discovery), keeps its JWKS, and verifies JWT access tokens (RFC 9068):
// signature with an allowed algorithm, iss, exp/nbf with a small skew, aud
// equal to this server's resource URI (RFC 8707), and reads sub and the
// scopes. Opaque tokens, when an introspection endpoint is configured, are
// checked the same way on the authorization server's answer (RFC 7662),
// which is kept for a short while. A token is never sent anywhere else.
package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/capio"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
)

// Algorithms are the signature algorithms a token may use: asymmetric
// ones only. "none" and the HMAC family (HS*) are never accepted, so that
// a token "signed" with an issuer's public key as an HMAC secret fails.
var Algorithms = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512,
	jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512,
	jose.EdDSA,
}

// Bounds on what comes from an authorization server.
const (
	// MaxDocumentBytes caps a metadata document or a JWKS.
	MaxDocumentBytes = 1 << 20
	// MaxKeys caps the keys of one JWKS.
	MaxKeys = 100
	// FetchTimeout bounds one request to an authorization server.
	FetchTimeout = 10 * time.Second
	// RefreshBurst and RefreshInterval bound the fetches of an issuer's
	// JWKS for a key it did not list: RefreshBurst at once, then one per
	// RefreshInterval, so that tokens with made-up key ids cannot make
	// the server hammer the issuer, while a rotation is picked up at once.
	RefreshBurst    = 3
	RefreshInterval = 30 * time.Second
	// ClockSkew is the tolerance on exp, nbf and iat.
	ClockSkew = 30 * time.Second
	// MaxTokenBytes caps the bearer token parsed.
	MaxTokenBytes = 16 << 10
)

// Options configures a Verifier.
type Options struct {
	// Issuers are the trusted issuers' identifiers (URLs), exactly as
	// their tokens' iss claims spell them.
	Issuers []string
	// Audience is this server's resource URI; a token's aud must hold it,
	// or one of AlsoAudiences (such as an API's client id, which Entra ID
	// v2.0 tokens carry instead).
	Audience      string
	AlsoAudiences []string
	// Client makes the requests to the issuers; nil means one with
	// FetchTimeout that dials no link-local, unspecified or multicast
	// address. Whichever it is, its redirects are followed only within
	// the rule every URL of an issuer obeys (see fetchRule), and
	// introspection follows none.
	Client *http.Client
	Log    *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Introspection, when set, is where tokens that are not JWTs are
	// introspected (RFC 7662); without it they are refused.
	Introspection *Introspection
}

// Verifier checks access tokens of the configured issuers.
type Verifier struct {
	o       Options
	client  *http.Client // o.Client, following redirects within the issuer's fetchRule
	issuers map[string]*issuer
	intro   *introspector // nil: opaque tokens are refused
}

// issuer is one trusted authorization server and its keys.
type issuer struct {
	id   string
	rule fetchRule // where its documents may come from
	// onWait, when set (by tests), is called when a token waits for the
	// fetch in flight.
	onWait func()

	mu      sync.Mutex
	jwksURI string
	keys    *jose.JSONWebKeySet
	// fetching is the fetch of the keys in flight, nil when none is: one
	// at a time, made without the lock held, so that tokens signed with
	// a key already kept never wait for it.
	fetching *fetch
	// credit is the refreshes allowed now, as of last.
	credit float64
	last   time.Time
}

// fetch is a fetch of an issuer's keys; err is set before done is closed.
type fetch struct {
	done chan struct{}
	err  error
}

// allowRefresh takes one refresh of the JWKS if the budget has one.
func (is *issuer) allowRefresh(now time.Time) bool {
	if !is.last.IsZero() {
		is.credit += float64(now.Sub(is.last)) / float64(RefreshInterval)
	}
	is.credit = min(is.credit, RefreshBurst)
	is.last = now
	if is.credit < 1 {
		return false
	}
	is.credit--
	return true
}

// CheckIssuer reports whether id can be an issuer: an absolute https URL
// (http only on a loopback host), without query or fragment.
func CheckIssuer(id string) error { return config.CheckAuthURL(id) }

// New returns a verifier for o. Nothing is fetched until a token names an
// issuer.
func New(o Options) (*Verifier, error) {
	if len(o.Issuers) == 0 {
		return nil, errors.New("no issuer")
	}
	if o.Audience == "" {
		return nil, errors.New("no audience")
	}
	if o.Client == nil {
		o.Client = defaultClient()
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	v := &Verifier{o: o, client: fetchClient(o.Client), issuers: map[string]*issuer{}}
	for _, id := range o.Issuers {
		if err := CheckIssuer(id); err != nil {
			return nil, fmt.Errorf("issuer %q: %w", id, err)
		}
		v.issuers[id] = &issuer{id: id, rule: newFetchRule(id), credit: RefreshBurst}
	}
	if o.Introspection != nil {
		in, err := newIntrospector(*o.Introspection, o.Client)
		if err != nil {
			return nil, err
		}
		v.intro = in
	}
	return v, nil
}

// claims are the parts of an access token read besides the registered
// claims.
type claims struct {
	Scope json.RawMessage `json:"scope"`
	Scp   json.RawMessage `json:"scp"`
}

// Verify checks token and returns what it says; an error that unwraps to
// auth.ErrInvalidToken for a token that is not good, another one when an
// issuer could not be reached. It is an auth.TokenVerifier.
func (v *Verifier) Verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	if len(token) > MaxTokenBytes {
		return nil, invalid("token too long")
	}
	if v.intro != nil && !IsJWT(token) {
		return v.intro.introspect(ctx, v, token)
	}
	tok, err := jwt.ParseSigned(token, Algorithms)
	if err != nil {
		return nil, invalid("not a JWT signed with an allowed algorithm")
	}
	if len(tok.Headers) != 1 {
		return nil, invalid("want one signature")
	}
	var unverified jwt.Claims
	if err := tok.UnsafeClaimsWithoutVerification(&unverified); err != nil {
		return nil, invalid("unreadable claims")
	}
	iss, ok := v.issuers[unverified.Issuer]
	if !ok {
		return nil, invalid("issuer not trusted")
	}
	key, err := iss.key(ctx, v, tok.Headers[0])
	if err != nil {
		return nil, err
	}
	var std jwt.Claims
	var more claims
	if err := tok.Claims(key.Key, &std, &more); err != nil {
		return nil, invalid("bad signature")
	}
	if std.Expiry == nil {
		return nil, invalid("no exp")
	}
	if std.Subject == "" {
		return nil, invalid("no sub")
	}
	exp := jwt.Expected{Issuer: iss.id, AnyAudience: v.audiences(), Time: v.o.Now()}
	if err := std.ValidateWithLeeway(exp, ClockSkew); err != nil {
		switch {
		case errors.Is(err, jwt.ErrExpired):
			return nil, invalid("token expired")
		case errors.Is(err, jwt.ErrInvalidAudience):
			return nil, invalid("token not meant for this server (aud)")
		}
		return nil, invalid(err.Error())
	}
	return &auth.TokenInfo{
		Scopes:     scopes(more),
		Expiration: std.Expiry.Time(),
		UserID:     Subject(iss.id, std.Subject),
		Extra:      map[string]any{"iss": iss.id, "sub": std.Subject},
	}, nil
}

// audiences are the aud values a token may carry.
func (v *Verifier) audiences() jwt.Audience {
	return append(jwt.Audience{v.o.Audience}, v.o.AlsoAudiences...)
}

// Subject is the one name of a token's holder: its issuer and subject.
func Subject(iss, sub string) string { return iss + " " + sub }

func invalid(why string) error { return fmt.Errorf("%w: %s", auth.ErrInvalidToken, why) }

// scopes reads scope (a space-separated string, RFC 9068) or scp (a string
// or an array, as Entra ID and Okta write it).
func scopes(c claims) []string {
	for _, raw := range []json.RawMessage{c.Scope, c.Scp} {
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return strings.Fields(s)
		}
		var list []string
		if json.Unmarshal(raw, &list) == nil {
			return list
		}
	}
	return nil
}

// key finds the key that signed a token: in the cached JWKS, else in a
// fresh one (within the refresh budget, see RefreshBurst). The fetch is
// made by its own goroutine without the lock held, one at a time: tokens
// signed with a key already kept are checked meanwhile, and tokens that
// need the new set wait for the fetch in flight rather than start
// another (nor spend the budget).
func (is *issuer) key(ctx context.Context, v *Verifier, h jose.Header) (*jose.JSONWebKey, error) {
	is.mu.Lock()
	if k := pick(is.keys, h); k != nil {
		is.mu.Unlock()
		return k, nil
	}
	f := is.fetching
	if f == nil {
		if !is.allowRefresh(v.o.Now()) {
			is.mu.Unlock()
			return nil, invalid("unknown signing key")
		}
		f = &fetch{done: make(chan struct{})}
		is.fetching = f
		// The fetch is the issuer's, not the request's: a client that
		// goes away does not cut it short (and spend the budget for
		// nothing).
		go is.refresh(context.WithoutCancel(ctx), v, f)
	} else if is.onWait != nil {
		is.onWait()
	}
	is.mu.Unlock()
	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for the keys of authorization server %s: %w", is.id, context.Cause(ctx))
	}
	if f.err != nil {
		return nil, fmt.Errorf("authorization server %s unreachable: %w", is.id, f.err)
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	if k := pick(is.keys, h); k != nil {
		return k, nil
	}
	return nil, invalid("unknown signing key")
}

// pick returns the signing key of set that h names (by kid; without a kid,
// the only key of its algorithm's type).
func pick(set *jose.JSONWebKeySet, h jose.Header) *jose.JSONWebKey {
	if set == nil {
		return nil
	}
	var found *jose.JSONWebKey
	n := 0
	for i := range set.Keys {
		k := &set.Keys[i]
		if k.Use == "enc" || !k.Valid() || !k.IsPublic() {
			continue
		}
		if k.Algorithm != "" && k.Algorithm != h.Algorithm {
			continue
		}
		if h.KeyID != "" && k.KeyID != h.KeyID {
			continue
		}
		found = k
		n++
	}
	if n != 1 {
		return nil
	}
	return found
}

// refresh fetches the issuer's metadata (once) and its JWKS, keeps the
// set, and ends f.
func (is *issuer) refresh(ctx context.Context, v *Verifier, f *fetch) {
	set, err := is.fetchKeys(ctx, v)
	is.mu.Lock()
	if err == nil {
		is.keys = set
	}
	is.fetching = nil
	is.mu.Unlock()
	if err != nil {
		v.o.Log.Warn("could not fetch an authorization server's keys", "issuer", is.id, "err", err)
	}
	f.err = err
	close(f.done)
}

// fetchKeys fetches the issuer's metadata (once) and its JWKS. Only the
// goroutine of the fetch in flight calls it.
func (is *issuer) fetchKeys(ctx context.Context, v *Verifier) (*jose.JSONWebKeySet, error) {
	is.mu.Lock()
	uri := is.jwksURI
	is.mu.Unlock()
	ctx = withRule(ctx, is.rule)
	if uri == "" {
		var err error
		if uri, err = discover(ctx, v.client, is.id); err != nil {
			return nil, err
		}
		is.mu.Lock()
		is.jwksURI = uri
		is.mu.Unlock()
	}
	var set jose.JSONWebKeySet
	if err := getJSON(ctx, v.client, uri, &set); err != nil {
		return nil, fmt.Errorf("JWKS %s: %w", uri, err)
	}
	if len(set.Keys) > MaxKeys {
		return nil, fmt.Errorf("JWKS %s: %d keys, more than %d", uri, len(set.Keys), MaxKeys)
	}
	return &set, nil
}

// MetadataURLs are where an issuer's metadata may be, in the order tried:
// RFC 8414 (with the well-known part inserted before the issuer's path),
// then OpenID Connect discovery (appended to the path, then inserted).
func MetadataURLs(issuerID string) []string {
	u, err := url.Parse(issuerID)
	if err != nil {
		return nil
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	base := u.Scheme + "://" + u.Host
	urls := []string{base + "/.well-known/oauth-authorization-server" + path}
	if path == "" {
		return append(urls, base+"/.well-known/openid-configuration")
	}
	return append(urls, base+path+"/.well-known/openid-configuration", base+"/.well-known/openid-configuration"+path)
}

// discover returns the jwks_uri of the issuer's metadata, from the first
// document found whose issuer is this one.
func discover(ctx context.Context, c *http.Client, issuerID string) (string, error) {
	var errs []error
	for _, mu := range MetadataURLs(issuerID) {
		var meta struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := getJSON(ctx, c, mu, &meta); err != nil {
			errs = append(errs, err)
			continue
		}
		if meta.Issuer != issuerID {
			return "", fmt.Errorf("%s names issuer %q, not %q", mu, meta.Issuer, issuerID)
		}
		if meta.JWKSURI == "" {
			return "", fmt.Errorf("%s has no jwks_uri", mu)
		}
		if err := CheckIssuer(meta.JWKSURI); err != nil {
			return "", fmt.Errorf("%s: jwks_uri %q: %w", mu, meta.JWKSURI, err)
		}
		u, _ := url.Parse(meta.JWKSURI) // CheckIssuer parsed it
		if err := checkRequest(ctx, u); err != nil {
			return "", fmt.Errorf("%s: jwks_uri: %w", mu, err)
		}
		return meta.JWKSURI, nil
	}
	return "", fmt.Errorf("no metadata found: %w", errors.Join(errs...))
}

// getJSON fetches u into dst, within FetchTimeout and MaxDocumentBytes;
// u and every redirect obey the fetchRule in ctx.
func getJSON(ctx context.Context, c *http.Client, u string, dst any) error {
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	if err := checkRequest(ctx, req.URL); err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body := capio.NewReadCloser(resp.Body, MaxDocumentBytes, func() error {
		return fmt.Errorf("%s: more than %d bytes", u, MaxDocumentBytes)
	})
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", u, resp.StatusCode)
	}
	if err := json.NewDecoder(body).Decode(dst); err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	return nil
}

package oauth

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/capio"
)

// Bounds on token introspection (RFC 7662).
const (
	// MaxIntrospectionBytes caps an introspection response.
	MaxIntrospectionBytes = 64 << 10
	// MaxIntrospections is the most introspection requests in flight at
	// once; more wait for a slot (within FetchTimeout).
	MaxIntrospections = 8
	// IntrospectionCacheTTL is how long an answer is kept: an active
	// token's no longer than until its exp.
	IntrospectionCacheTTL = 60 * time.Second
	// IntrospectionCacheSize is the most answers kept; past it the oldest
	// goes.
	IntrospectionCacheSize = 10_000
	// MaxSubjectBytes and MaxScopeBytes cap what an active token's answer
	// may say, so that the cache stays small.
	MaxSubjectBytes = 255
	MaxScopeBytes   = 4 << 10
)

// Introspection is where and as whom opaque tokens are introspected.
type Introspection struct {
	// URL is the authorization server's introspection endpoint.
	URL string
	// ClientID and ClientSecret authenticate this server to it
	// (client_secret_basic).
	ClientID     string
	ClientSecret string
	// CacheSize overrides IntrospectionCacheSize when positive.
	CacheSize int
}

// introspector asks the authorization server about opaque tokens and
// keeps its answers for a while.
type introspector struct {
	o      Introspection
	client *http.Client // the verifier's, following no redirect
	slots  chan struct{}

	mu       sync.Mutex
	cache    map[[32]byte]*list.Element // of *entry
	order    *list.List                 // oldest first
	inflight map[[32]byte]*call
}

// entry is one kept answer: the token's info, or why it is refused.
type entry struct {
	key   [32]byte
	info  *auth.TokenInfo
	err   error
	until time.Time
}

// call is an introspection under way, which the requests for the same
// token wait on.
type call struct {
	done chan struct{}
	info *auth.TokenInfo
	err  error
}

func newIntrospector(o Introspection, c *http.Client) (*introspector, error) {
	if err := CheckIssuer(o.URL); err != nil {
		return nil, fmt.Errorf("introspection URL %q: %w", o.URL, err)
	}
	if o.ClientID == "" || o.ClientSecret == "" {
		return nil, errors.New("introspection needs a client id and a client secret")
	}
	if o.CacheSize <= 0 {
		o.CacheSize = IntrospectionCacheSize
	}
	// A redirect would send the token, and perhaps the credentials, to
	// another URL: it is an error instead.
	noRedirect := *c
	noRedirect.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &introspector{
		o:        o,
		client:   &noRedirect,
		slots:    make(chan struct{}, MaxIntrospections),
		cache:    map[[32]byte]*list.Element{},
		order:    list.New(),
		inflight: map[[32]byte]*call{},
	}, nil
}

// IsJWT reports whether token has the shape of a compact JWS: three
// base64url parts separated by dots.
func IsJWT(token string) bool {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return false
	}
	for _, p := range parts {
		if strings.IndexFunc(p, func(r rune) bool {
			return (r < 'A' || r > 'Z') && (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' && r != '_'
		}) >= 0 {
			return false
		}
	}
	return true
}

// introspect returns what the authorization server says of token: from
// the cache, from a request under way for the same token, or from a new
// one.
func (in *introspector) introspect(ctx context.Context, v *Verifier, token string) (*auth.TokenInfo, error) {
	key := sha256.Sum256([]byte(token))
	now := v.o.Now()
	in.mu.Lock()
	if el, ok := in.cache[key]; ok {
		e := el.Value.(*entry)
		if now.Before(e.until) {
			in.mu.Unlock()
			return e.info, e.err
		}
		in.order.Remove(el)
		delete(in.cache, key)
	}
	c, ok := in.inflight[key]
	if !ok {
		c = &call{done: make(chan struct{})}
		in.inflight[key] = c
		// The request is the server's, not the caller's: a client that
		// goes away does not cut it short for the others waiting on it.
		go in.run(context.WithoutCancel(ctx), v, key, token, c)
	}
	in.mu.Unlock()
	select {
	case <-c.done:
		return c.info, c.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// run makes one introspection request and keeps its answer.
func (in *introspector) run(ctx context.Context, v *Verifier, key [32]byte, token string, c *call) {
	ctx, cancel := context.WithTimeout(ctx, FetchTimeout)
	defer cancel()
	var until time.Time
	select {
	case in.slots <- struct{}{}:
		c.info, c.err, until = in.ask(ctx, v, token)
		<-in.slots
	case <-ctx.Done():
		c.err = fmt.Errorf("token introspection at %s: %d requests in flight for %s", in.o.URL, MaxIntrospections, FetchTimeout)
	}
	in.mu.Lock()
	delete(in.inflight, key)
	if !until.IsZero() {
		in.keep(&entry{key: key, info: c.info, err: c.err, until: until})
	}
	in.mu.Unlock()
	close(c.done)
}

// keep adds e to the cache, the oldest entry out when it is full. in.mu
// is held.
func (in *introspector) keep(e *entry) {
	for in.order.Len() >= in.o.CacheSize {
		old := in.order.Remove(in.order.Front()).(*entry)
		delete(in.cache, old.key)
	}
	in.cache[e.key] = in.order.PushBack(e)
}

// response is the part of an introspection response read.
type response struct {
	Active    *bool           `json:"active"`
	Scope     json.RawMessage `json:"scope"`
	Sub       string          `json:"sub"`
	Iss       string          `json:"iss"`
	Aud       json.RawMessage `json:"aud"`
	Exp       *float64        `json:"exp"`
	Nbf       *float64        `json:"nbf"`
	TokenType string          `json:"token_type"`
	Cnf       json.RawMessage `json:"cnf"`
}

// ask posts token to the introspection endpoint and checks the answer.
// until is how long the answer may be kept (zero: not at all, as when the
// endpoint failed).
func (in *introspector) ask(ctx context.Context, v *Verifier, token string) (info *auth.TokenInfo, err error, until time.Time) {
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.o.URL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, in.failed(v, err), time.Time{}
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	// RFC 6749 section 2.3.1: the id and secret are form-encoded first.
	req.SetBasicAuth(url.QueryEscape(in.o.ClientID), url.QueryEscape(in.o.ClientSecret))
	resp, err := in.client.Do(req)
	if err != nil {
		return nil, in.failed(v, scrubURLError(err)), time.Time{}
	}
	defer resp.Body.Close()
	body := capio.NewReadCloser(resp.Body, MaxIntrospectionBytes, func() error {
		return fmt.Errorf("more than %d bytes", MaxIntrospectionBytes)
	})
	if resp.StatusCode != http.StatusOK {
		return nil, in.failed(v, fmt.Errorf("HTTP %d", resp.StatusCode)), time.Time{}
	}
	var r response
	if err := json.NewDecoder(body).Decode(&r); err != nil {
		return nil, in.failed(v, err), time.Time{}
	}
	if r.Active == nil {
		return nil, in.failed(v, errors.New("no active member")), time.Time{}
	}
	now := v.o.Now()
	info, err = in.check(v, &r, now)
	if err != nil {
		if errors.Is(err, errNotYet) {
			return nil, err, time.Time{} // it may be good soon
		}
		return nil, err, now.Add(IntrospectionCacheTTL)
	}
	if until = minTime(now.Add(IntrospectionCacheTTL), info.Expiration); !until.After(now) {
		until = time.Time{} // expired but within the clock skew: not kept
	}
	return info, nil, until
}

var errNotYet = invalid("token not valid yet (nbf)")

// check reads an introspection response as this server's rules ask.
func (in *introspector) check(v *Verifier, r *response, now time.Time) (*auth.TokenInfo, error) {
	if !*r.Active {
		return nil, invalid("token not active")
	}
	if t := strings.ToLower(r.TokenType); t != "" && t != "bearer" {
		return nil, invalid("not a bearer access token (token_type)")
	}
	if len(r.Cnf) > 0 && string(r.Cnf) != "null" {
		return nil, invalid("token bound to a key (cnf), not a bearer token")
	}
	iss := r.Iss
	switch {
	case iss != "":
		if _, ok := v.issuers[iss]; !ok {
			return nil, invalid("issuer not trusted")
		}
	case len(v.o.Issuers) == 1:
		iss = v.o.Issuers[0]
	default:
		return nil, invalid("no iss, and several issuers are trusted")
	}
	var aud []string
	if len(r.Aud) == 0 || string(r.Aud) == "null" {
		return nil, invalid("token not meant for this server (no aud)")
	}
	if err := json.Unmarshal(r.Aud, &aud); err != nil {
		var one string
		if json.Unmarshal(r.Aud, &one) != nil {
			return nil, invalid("unreadable aud")
		}
		aud = []string{one}
	}
	if !slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(v.audiences(), a) }) {
		return nil, invalid("token not meant for this server (aud)")
	}
	if r.Exp == nil {
		return nil, invalid("no exp")
	}
	exp := unixTime(*r.Exp)
	if !now.Before(exp.Add(ClockSkew)) {
		return nil, invalid("token expired")
	}
	if r.Nbf != nil && now.Add(ClockSkew).Before(unixTime(*r.Nbf)) {
		return nil, errNotYet
	}
	if r.Sub == "" {
		return nil, invalid("no sub")
	}
	if len(r.Sub) > MaxSubjectBytes {
		return nil, invalid(fmt.Sprintf("sub longer than %d bytes", MaxSubjectBytes))
	}
	var scope string
	if len(r.Scope) > 0 && string(r.Scope) != "null" {
		if err := json.Unmarshal(r.Scope, &scope); err != nil {
			return nil, invalid("scope is not a string")
		}
	}
	if len(scope) > MaxScopeBytes {
		return nil, invalid(fmt.Sprintf("scope longer than %d bytes", MaxScopeBytes))
	}
	return &auth.TokenInfo{
		Scopes:     strings.Fields(scope),
		Expiration: exp,
		UserID:     Subject(iss, r.Sub),
		Extra:      map[string]any{"iss": iss, "sub": r.Sub},
	}, nil
}

// failed is the error of an introspection request that got no usable
// answer: logged, and naming the endpoint but never the token or the
// client's secret.
func (in *introspector) failed(v *Verifier, err error) error {
	v.o.Log.Warn("token introspection failed", "url", in.o.URL, "err", err)
	return fmt.Errorf("token introspection at %s failed: %w", in.o.URL, err)
}

// scrubURLError drops the request's URL and method from err, which name
// only the endpoint, so that the message reads the same as the others.
func scrubURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// unixTime is a NumericDate (seconds, perhaps fractional) as a time;
// out-of-range values are clamped far away.
func unixTime(s float64) time.Time {
	switch {
	case math.IsNaN(s) || s < -1e12:
		return time.Unix(-1e12, 0)
	case s > 1e12:
		return time.Unix(1e12, 0)
	}
	sec, frac := math.Modf(s)
	return time.Unix(int64(sec), int64(frac*1e9))
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

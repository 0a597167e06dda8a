package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

// roundTripFunc is an http.RoundTripper.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestSlowKeySetDoesNotStallKnownKeys: while a token of a key id the
// JWKS does not hold waits for a fetch of the set that does not answer,
// a token signed with a key already kept is checked at once, without
// waiting for that fetch; the waiting token is refused once the set
// comes without its key.
func TestSlowKeySetDoesNotStallKnownKeys(t *testing.T) {
	f := newFakeIssuer(t, "")
	known := f.signer(t, jose.ES256, "known", true)
	// fetchEnded is closed when the client has the held-back fetch's
	// answer (or gave up on it): a Verify that waited for the fetch
	// returns after it.
	var held atomic.Bool
	fetchEnded := make(chan struct{})
	client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := http.DefaultTransport.RoundTrip(r)
		if r.URL.Path == "/jwks" && held.Load() {
			close(fetchEnded)
		}
		return resp, err
	})}
	v, err := New(Options{Issuers: []string{f.id}, Audience: audience, Client: client})
	if err != nil {
		t.Fatal(err)
	}
	token := sign(t, known, f.claims(nil))
	if _, err := v.Verify(context.Background(), token, nil); err != nil {
		t.Fatal(err)
	}

	entered, release := make(chan struct{}), make(chan struct{})
	f.jwksGate = func(r *http.Request) {
		close(entered)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
	held.Store(true)
	unknownToken := sign(t, f.signer(t, jose.ES256, "rotated?", false), f.claims(nil))
	unknown := make(chan error, 1)
	go func() {
		_, err := v.Verify(context.Background(), unknownToken, nil)
		unknown <- err
	}()
	<-entered // the fetch for the unknown key is in flight, held back

	if _, err := v.Verify(context.Background(), token, nil); err != nil {
		t.Fatalf("a token of a kept key, during a fetch: %v", err)
	}
	select {
	case <-fetchEnded:
		t.Fatal("the token of a kept key waited for the fetch of the key set to end")
	case err := <-unknown:
		t.Fatalf("the token of an unknown key did not wait for the fetch: %v", err)
	default:
	}
	close(release)
	if err := <-unknown; !errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("a token of a key the fetched set does not hold: %v, want ErrInvalidToken", err)
	}
	if n := f.jwksGets.Load(); n != 2 {
		t.Errorf("%d JWKS fetches, want 2", n)
	}
}

// TestOneKeyFetchInFlight: tokens of made-up key ids sent while a fetch
// is in flight wait for it instead of starting others; a token whose
// request ends stops waiting (the fetch goes on); and the fetches they
// cause stay within the refresh budget.
func TestOneKeyFetchInFlight(t *testing.T) {
	f := newFakeIssuer(t, "")
	known := f.signer(t, jose.ES256, "known", true)
	now := time.Now()
	v := newVerifier(t, func() time.Time { return now }, f.id)
	if _, err := v.Verify(context.Background(), sign(t, known, f.claims(nil)), nil); err != nil {
		t.Fatal(err)
	}
	const n = 20
	waiting := make(chan struct{}, n+1)
	v.issuers[f.id].onWait = func() { waiting <- struct{}{} }
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	f.jwksGate = func(r *http.Request) {
		once.Do(func() { close(entered) })
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
	forged := make([]string, n+12)
	for i := range forged {
		forged[i] = sign(t, f.signer(t, jose.ES256, fmt.Sprintf("made-up-%d", i), false), f.claims(nil))
	}
	errs := make(chan error, n+1)
	go func() {
		_, err := v.Verify(context.Background(), forged[n+1], nil)
		errs <- err
	}()
	<-entered
	for i := range n {
		go func() {
			_, err := v.Verify(context.Background(), forged[i], nil)
			errs <- err
		}()
	}
	// One more, whose client goes away while it waits.
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() {
		_, err := v.Verify(ctx, forged[n], nil)
		gone <- err
	}()
	for range n + 1 {
		<-waiting
	}
	cancel()
	if err := <-gone; err == nil || errors.Is(err, auth.ErrInvalidToken) || !errors.Is(err, context.Canceled) {
		t.Errorf("a token whose request ended while it waited: %v, want context.Canceled", err)
	}
	close(release)
	for range n + 1 {
		if err := <-errs; !errors.Is(err, auth.ErrInvalidToken) {
			t.Errorf("a token of a made-up key: %v, want ErrInvalidToken", err)
		}
	}
	if got := f.jwksGets.Load(); got != 2 {
		t.Errorf("%d JWKS fetches for %d tokens of made-up keys during one fetch, want 2 (the first and that one)", got, n+2)
	}
	// The budget's last fetch at this instant, then none.
	f.jwksGate = nil
	for _, tok := range forged[n+2:] {
		if _, err := v.Verify(context.Background(), tok, nil); !errors.Is(err, auth.ErrInvalidToken) {
			t.Fatalf("a token of a made-up key: %v", err)
		}
	}
	if got := f.jwksGets.Load(); got != RefreshBurst {
		t.Errorf("%d JWKS fetches, want %d (the burst)", got, RefreshBurst)
	}
}

// listenOn starts an httptest server on addr (such as 127.0.0.2:0).
func listenOn(t *testing.T, addr string, h http.Handler) *httptest.Server {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = l
	srv.Start()
	t.Cleanup(srv.Close)
	return srv
}

// TestKeySetRedirects: the JWKS's URL and every redirect from it obey the
// issuer's own rule: plain http only on the issuer's own host, never a
// link-local address. A key served elsewhere does not sign tokens, and
// the other host is not even asked; a redirect within the issuer's host
// is followed.
func TestKeySetRedirects(t *testing.T) {
	var elsewhereGets atomic.Int32
	var elsewhereKeys atomic.Value // []byte
	elsewhere := listenOn(t, "127.0.0.2:0", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhereGets.Add(1)
		w.Write(elsewhereKeys.Load().([]byte))
	}))
	for _, tc := range []struct {
		name      string
		redirect  string // from the issuer's /jwks
		jwksURI   string // in its metadata
		elsewhere bool   // the key is served by the other host
		ok        bool
		errSays   string
	}{
		{name: "plain http on another loopback host", redirect: elsewhere.URL + "/jwks", elsewhere: true, errSays: "plain http only on the issuer's own host"},
		{name: "jwks_uri on another loopback host", jwksURI: elsewhere.URL + "/jwks", elsewhere: true, errSays: "plain http only on the issuer's own host"},
		{name: "link-local", redirect: "http://169.254.169.254/latest/jwks", errSays: "refused"},
		{name: "link-local over https", redirect: "https://169.254.169.254/jwks", errSays: "link-local"},
		{name: "ipv6 link-local", redirect: "https://[fe80::1]/jwks", errSays: "link-local"},
		{name: "user information", redirect: "https://user:pw@idp.example.com/jwks", errSays: "user information"},
		{name: "another scheme", redirect: "ftp://idp.example.com/jwks", errSays: "want https"},
		{name: "same host, another path", redirect: "/keys", ok: true},
		{name: "too many", redirect: "/jwks", errSays: "redirects"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			elsewhereGets.Store(0)
			f := newFakeIssuer(t, "")
			s := f.signer(t, jose.ES256, "k", true)
			set, _ := json.Marshal(jose.JSONWebKeySet{Keys: f.keys})
			elsewhereKeys.Store(set)
			if tc.elsewhere {
				f.keys = nil // only the other host has the key
			}
			f.jwksURI = tc.jwksURI
			f.jwksRedirect = tc.redirect
			v := newVerifier(t, nil, f.id)
			_, err := v.Verify(context.Background(), sign(t, s, f.claims(nil)), nil)
			if tc.ok {
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				return
			}
			if err == nil || errors.Is(err, auth.ErrInvalidToken) || !strings.Contains(err.Error(), tc.errSays) {
				t.Errorf("Verify: %v, want an error of the issuer saying %q", err, tc.errSays)
			}
			if n := elsewhereGets.Load(); n != 0 {
				t.Errorf("the other host was asked %d times", n)
			}
		})
	}
}

// TestFetchRule is the rule of the URLs of an issuer's documents, for an
// issuer on this machine and a remote one.
func TestFetchRule(t *testing.T) {
	local, remote := newFetchRule("http://127.0.0.1:8080/realms/x"), newFetchRule("https://idp.example.com")
	for _, tc := range []struct {
		r   fetchRule
		url string
		ok  bool
	}{
		{local, "http://127.0.0.1:8080/jwks", true},
		{local, "http://127.0.0.1:9090/jwks", true}, // the same host, another port
		{local, "http://127.0.0.1.:8080/jwks", true},
		{local, "http://127.0.0.2:8080/jwks", false},
		{local, "http://localhost:8080/jwks", false},
		{local, "http://[::1]:8080/jwks", false},
		{local, "http://idp.example.com/jwks", false},
		{local, "https://idp.example.com/jwks", true},
		{local, "https://localhost/jwks", true},
		{local, "http://169.254.169.254/", false},
		{remote, "https://idp.example.com/jwks", true},
		{remote, "https://keys.example.net/jwks", true},
		{remote, "https://10.1.2.3/jwks", true}, // a company network's
		{remote, "http://idp.example.com/jwks", false},
		{remote, "http://127.0.0.1/jwks", false},
		{remote, "https://127.0.0.1/jwks", false},
		{remote, "https://[::ffff:127.0.0.1]/jwks", false},
		{remote, "https://localhost/jwks", false},
		{remote, "https://a.localhost/jwks", false},
		{remote, "https://169.254.169.254/jwks", false},
		{remote, "https://[::ffff:169.254.169.254]/jwks", false},
		{remote, "https://[fe80::1%25eth0]/jwks", false},
		{remote, "https://0.0.0.0/jwks", false},
		{remote, "https://224.0.0.1/jwks", false},
		{remote, "https://u@idp.example.com/jwks", false},
		{remote, "file:///etc/passwd", false},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		if err := tc.r.check(u); (err == nil) != tc.ok {
			t.Errorf("issuer host %s, %s: %v, want allowed=%v", tc.r.host, tc.url, err, tc.ok)
		}
	}
}

// TestDefaultClientDialsNoLinkLocal: the default client refuses a
// link-local address where it is dialed, as one a name resolves to.
func TestDefaultClientDialsNoLinkLocal(t *testing.T) {
	c := defaultClient()
	c.Timeout = 5 * time.Second
	c.Transport.(*http.Transport).Proxy = nil // dial the address itself, whatever the environment says
	_, err := c.Get("http://169.254.169.254:9/")
	if err == nil || !strings.Contains(err.Error(), "is refused") {
		t.Errorf("GET of a link-local address: %v", err)
	}
}

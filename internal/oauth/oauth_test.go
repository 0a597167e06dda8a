package oauth

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
	"github.com/modelcontextprotocol/go-sdk/auth"
)

const audience = "https://mcp.example.com/mcp"

// fakeIssuer is an authorization server's metadata and JWKS on a loopback
// port; metaPath is where its metadata is served ("" for every form).
type fakeIssuer struct {
	srv        *httptest.Server
	id         string
	keys       []jose.JSONWebKey // public
	jwks       func() []byte     // overrides keys when set
	jwksGets   atomic.Int32
	metaPath   string
	metaIssuer string // overrides the metadata's issuer when set
	jwksURI    string // overrides the metadata's jwks_uri when set
	// jwksGate, when set, is called before the JWKS is served (to
	// hold it back); jwksRedirect, when set, is where the JWKS's URL
	// redirects to instead.
	jwksGate     func(*http.Request)
	jwksRedirect string
}

func newFakeIssuer(t *testing.T, path string) *fakeIssuer {
	f := &fakeIssuer{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/jwks":
			f.jwksGets.Add(1)
			if f.jwksGate != nil {
				f.jwksGate(r)
			}
			if f.jwksRedirect != "" {
				http.Redirect(w, r, f.jwksRedirect, http.StatusFound)
				return
			}
			if f.jwks != nil {
				w.Write(f.jwks())
				return
			}
			json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: f.keys})
		case r.URL.Path == "/keys": // the set at another path, as is
			json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: f.keys})
		case strings.Contains(r.URL.Path, "/.well-known/") && (f.metaPath == "" || r.URL.Path == f.metaPath):
			iss := f.id
			if f.metaIssuer != "" {
				iss = f.metaIssuer
			}
			jwks := f.srv.URL + "/jwks"
			if f.jwksURI != "" {
				jwks = f.jwksURI
			}
			json.NewEncoder(w).Encode(map[string]string{"issuer": iss, "jwks_uri": jwks})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.srv.Close)
	f.id = f.srv.URL + path
	return f
}

// signer signs with a new key of alg, listed in f's JWKS under kid.
func (f *fakeIssuer) signer(t *testing.T, alg jose.SignatureAlgorithm, kid string, listed bool) jose.Signer {
	t.Helper()
	var priv, pub any
	switch alg {
	case jose.EdDSA:
		p, k, _ := ed25519.GenerateKey(rand.Reader)
		pub, priv = p, k
	default:
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		pub, priv = &k.PublicKey, k
	}
	if listed {
		f.keys = append(f.keys, jose.JSONWebKey{Key: pub, KeyID: kid, Algorithm: string(alg), Use: "sig"})
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: priv}, (&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func sign(t *testing.T, s jose.Signer, claims map[string]any) string {
	t.Helper()
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (f *fakeIssuer) claims(change map[string]any) map[string]any {
	now := time.Now().Unix()
	c := map[string]any{"iss": f.id, "sub": "alice", "aud": audience, "exp": now + 600, "iat": now, "scope": "gemini other"}
	for k, v := range change {
		c[k] = v
	}
	return c
}

func newVerifier(t *testing.T, now func() time.Time, issuers ...string) *Verifier {
	t.Helper()
	v, err := New(Options{Issuers: issuers, Audience: audience, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestMetadataURLs(t *testing.T) {
	for issuer, want := range map[string][]string{
		"https://idp.example.com":  {"https://idp.example.com/.well-known/oauth-authorization-server", "https://idp.example.com/.well-known/openid-configuration"},
		"https://idp.example.com/": {"https://idp.example.com/.well-known/oauth-authorization-server", "https://idp.example.com/.well-known/openid-configuration"},
		"https://idp.example.com/realms/mcp": {
			"https://idp.example.com/.well-known/oauth-authorization-server/realms/mcp",
			"https://idp.example.com/realms/mcp/.well-known/openid-configuration",
			"https://idp.example.com/.well-known/openid-configuration/realms/mcp",
		},
	} {
		if got := MetadataURLs(issuer); !slices.Equal(got, want) {
			t.Errorf("MetadataURLs(%q) = %q, want %q", issuer, got, want)
		}
	}
}

// TestDiscovery finds the metadata at each of its places, and takes a
// token signed by a key of the JWKS it names, with ES256 and EdDSA, and
// scopes written as scope or as scp (string or array).
func TestDiscovery(t *testing.T) {
	for _, where := range []string{"/.well-known/oauth-authorization-server/tenant", "/tenant/.well-known/openid-configuration", "/.well-known/openid-configuration/tenant"} {
		t.Run(where, func(t *testing.T) {
			f := newFakeIssuer(t, "/tenant")
			f.metaPath = where
			es := f.signer(t, jose.ES256, "es", true)
			ed := f.signer(t, jose.EdDSA, "ed", true)
			v := newVerifier(t, nil, f.id)
			for _, tc := range []struct {
				s      jose.Signer
				change map[string]any
			}{
				{es, nil},
				{ed, map[string]any{"scope": nil, "scp": "gemini other"}},
				{es, map[string]any{"scope": nil, "scp": []string{"gemini", "other"}}},
			} {
				info, err := v.Verify(context.Background(), sign(t, tc.s, f.claims(tc.change)), nil)
				if err != nil {
					t.Fatalf("Verify: %v", err)
				}
				if info.UserID != Subject(f.id, "alice") || !slices.Equal(info.Scopes, []string{"gemini", "other"}) || info.Expiration.IsZero() {
					t.Errorf("TokenInfo %+v", info)
				}
			}
		})
	}
}

// TestRefreshBudget: tokens naming key ids the JWKS does not hold fetch it
// again RefreshBurst times at most, then once per RefreshInterval; a key
// added at the issuer is then found.
func TestRefreshBudget(t *testing.T) {
	f := newFakeIssuer(t, "")
	known := f.signer(t, jose.ES256, "known", true)
	now := time.Now()
	v := newVerifier(t, func() time.Time { return now }, f.id)
	if _, err := v.Verify(context.Background(), sign(t, known, f.claims(nil)), nil); err != nil {
		t.Fatal(err)
	}
	if n := f.jwksGets.Load(); n != 1 {
		t.Fatalf("%d JWKS fetches for the first token, want 1", n)
	}
	for i := range 20 {
		forged := f.signer(t, jose.ES256, "made-up-"+string(rune('a'+i)), false)
		if _, err := v.Verify(context.Background(), sign(t, forged, f.claims(nil)), nil); !errors.Is(err, auth.ErrInvalidToken) {
			t.Fatalf("a token of an unknown key: %v", err)
		}
	}
	if n := f.jwksGets.Load(); n != 1+RefreshBurst-1 {
		// The first fetch took one of the burst.
		t.Errorf("%d JWKS fetches after 20 unknown keys, want %d", n, RefreshBurst)
	}
	rotated := f.signer(t, jose.ES256, "rotated", true)
	if _, err := v.Verify(context.Background(), sign(t, rotated, f.claims(nil)), nil); err == nil {
		t.Fatal("a new key was fetched past the budget")
	}
	now = now.Add(RefreshInterval)
	if _, err := v.Verify(context.Background(), sign(t, rotated, f.claims(nil)), nil); err != nil {
		t.Errorf("a rotated key, one interval later: %v", err)
	}
}

// TestRefused: what is not a good token is auth.ErrInvalidToken; what an
// issuer gets wrong is another error.
func TestRefused(t *testing.T) {
	f := newFakeIssuer(t, "")
	s := f.signer(t, jose.ES256, "k", true)
	v := newVerifier(t, nil, f.id)
	now := time.Now().Unix()
	for name, claims := range map[string]map[string]any{
		"audience":  f.claims(map[string]any{"aud": "https://other.example.com/mcp"}),
		"issuer":    f.claims(map[string]any{"iss": "https://evil.example.com"}),
		"expired":   f.claims(map[string]any{"exp": now - 120}),
		"no exp":    f.claims(map[string]any{"exp": nil}),
		"no sub":    f.claims(map[string]any{"sub": nil}),
		"not yet":   f.claims(map[string]any{"nbf": now + 120}),
		"too large": f.claims(map[string]any{"pad": strings.Repeat("x", MaxTokenBytes)}),
	} {
		if _, err := v.Verify(context.Background(), sign(t, s, claims), nil); !errors.Is(err, auth.ErrInvalidToken) {
			t.Errorf("%s: %v, want ErrInvalidToken", name, err)
		}
	}
	// Within the skew, still good.
	if _, err := v.Verify(context.Background(), sign(t, s, f.claims(map[string]any{"exp": now - 5})), nil); err != nil {
		t.Errorf("expired 5 s ago, within the skew: %v", err)
	}

	for name, setup := range map[string]func(f *fakeIssuer){
		"metadata of another issuer": func(f *fakeIssuer) { f.metaIssuer = "https://evil.example.com" },
		"JWKS over the cap": func(f *fakeIssuer) {
			f.jwks = func() []byte { return []byte(`{"keys":[],"pad":"` + strings.Repeat("x", MaxDocumentBytes) + `"}`) }
		},
		"too many keys": func(f *fakeIssuer) {
			f.jwks = func() []byte {
				k := f.keys[0]
				many := make([]jose.JSONWebKey, MaxKeys+1)
				for i := range many {
					many[i] = k
				}
				b, _ := json.Marshal(jose.JSONWebKeySet{Keys: many})
				return b
			}
		},
	} {
		f := newFakeIssuer(t, "")
		s := f.signer(t, jose.ES256, "k", true)
		setup(f)
		v := newVerifier(t, nil, f.id)
		_, err := v.Verify(context.Background(), sign(t, s, f.claims(nil)), nil)
		if err == nil || errors.Is(err, auth.ErrInvalidToken) {
			t.Errorf("%s: %v, want an error of the issuer", name, err)
		}
	}
}

func TestNewChecksIssuers(t *testing.T) {
	for _, iss := range []string{"http://idp.example.com", "https://idp.example.com?x=1", "idp.example.com", "https://idp.example.com#f"} {
		if _, err := New(Options{Issuers: []string{iss}, Audience: audience}); err == nil {
			t.Errorf("New accepted issuer %q", iss)
		}
	}
	if _, err := New(Options{Issuers: []string{"http://127.0.0.1:9/x", "https://idp.example.com"}, Audience: audience}); err != nil {
		t.Error(err)
	}
}

// TestAlsoAudiences: a token whose aud is one of AlsoAudiences (an Entra
// ID v2.0 token names the API's client id) is accepted; without it, or
// with another value, it is refused.
func TestAlsoAudiences(t *testing.T) {
	f := newFakeIssuer(t, "")
	s := f.signer(t, jose.ES256, "k", true)
	const clientID = "9f1c2d4e-0000-4000-8000-123456789abc"
	token := sign(t, s, f.claims(map[string]any{"aud": clientID}))
	if _, err := newVerifier(t, nil, f.id).Verify(context.Background(), token, nil); !errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("a client id audience without AlsoAudiences: %v, want ErrInvalidToken", err)
	}
	v, err := New(Options{Issuers: []string{f.id}, Audience: audience, AlsoAudiences: []string{clientID}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(context.Background(), token, nil); err != nil {
		t.Errorf("a client id audience in AlsoAudiences: %v", err)
	}
	if _, err := v.Verify(context.Background(), sign(t, s, f.claims(map[string]any{"aud": "another-client"})), nil); !errors.Is(err, auth.ErrInvalidToken) {
		t.Errorf("another audience: %v, want ErrInvalidToken", err)
	}
	if _, err := v.Verify(context.Background(), sign(t, s, f.claims(nil)), nil); err != nil {
		t.Errorf("the resource URI still: %v", err)
	}
}

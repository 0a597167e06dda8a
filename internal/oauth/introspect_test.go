package oauth

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

const (
	introIssuer = "https://idp.example.com"
	introURL    = "https://idp.example.com/token/introspection"
	introClient = "mcp server"
	introSecret = "s3cret:with/odd+chars-0123456789"
	opaque      = "opaque-token-0123456789abcdefghij"
)

// introspectionEndpoint is an in-process introspection endpoint: answer
// gives each token's status and body; calls counts the requests.
type introspectionEndpoint struct {
	answer func(token string) (int, string)
	calls  atomic.Int32
	bad    atomic.Value // string: what a request got wrong
}

func (e *introspectionEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.calls.Add(1)
	id, secret, ok := r.BasicAuth()
	id, _ = url.QueryUnescape(id)
	secret, _ = url.QueryUnescape(secret)
	switch {
	case !ok || id != introClient || secret != introSecret:
		e.bad.Store(fmt.Sprintf("basic auth %q %q %v", id, secret, ok))
	case r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded":
		e.bad.Store(r.Method + " " + r.Header.Get("Content-Type"))
	}
	r.ParseForm()
	code, body := e.answer(r.PostForm.Get("token"))
	w.WriteHeader(code)
	io.WriteString(w, body)
}

// roundTrip serves h in process, so that tests in a synctest bubble can
// use it.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func inProcess(h http.Handler) *http.Client {
	return &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if err := r.Context().Err(); err != nil {
			return nil, err
		}
		return rec.Result(), nil
	})}
}

// activeBody is an active token's answer, changed by change (nil deletes).
func activeBody(change map[string]any) string {
	m := map[string]any{
		"active": true, "iss": introIssuer, "sub": "alice", "aud": audience, "scope": "gemini other",
		"client_id": "c", "token_type": "Bearer", "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix(),
	}
	for k, v := range change {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func newIntrospecting(t *testing.T, c *http.Client, log *bytes.Buffer, cacheSize int, issuers ...string) *Verifier {
	t.Helper()
	if len(issuers) == 0 {
		issuers = []string{introIssuer}
	}
	o := Options{Issuers: issuers, Audience: audience, Client: c,
		Introspection: &Introspection{URL: introURL, ClientID: introClient, ClientSecret: introSecret, CacheSize: cacheSize}}
	if log != nil {
		o.Log = slog.New(slog.NewTextHandler(log, nil))
	}
	v, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestIsJWT(t *testing.T) {
	for tok, want := range map[string]bool{
		"eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln": true,
		"eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.":      true, // alg none: a JWT, refused as one
		opaque:                                      false,
		"a.b":                                       false,
		"a.b.c.d":                                   false,
		".b.c":                                      false,
		"a.b+/.c":                                   false, // base64, not base64url
		"a.b=.c":                                    false,
		"2YotnFZFEjr1zCsicMWpAA":                    false, // RFC 6749's example
		"tGzv3JOkF0XG5Qx2TlKWIA.x.y=":               false,
	} {
		if got := IsJWT(tok); got != want {
			t.Errorf("IsJWT(%q) = %v, want %v", tok, got, want)
		}
	}
}

// TestIntrospectionAccepts sends an opaque token to a real HTTP endpoint:
// the request carries the token and client_secret_basic credentials
// (form-encoded, RFC 6749 2.3.1), and an active answer gives the subject
// and scopes.
func TestIntrospectionAccepts(t *testing.T) {
	ep := &introspectionEndpoint{answer: func(tok string) (int, string) {
		if tok != opaque {
			return 200, `{"active":false}`
		}
		return 200, activeBody(map[string]any{"aud": []string{"https://other.example.com", audience}})
	}}
	srv := httptest.NewServer(ep)
	defer srv.Close()
	v, err := New(Options{Issuers: []string{introIssuer}, Audience: audience,
		Introspection: &Introspection{URL: srv.URL + "/introspect", ClientID: introClient, ClientSecret: introSecret}})
	if err != nil {
		t.Fatal(err)
	}
	info, err := v.Verify(t.Context(), opaque, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bad := ep.bad.Load(); bad != nil {
		t.Errorf("the introspection request: %v", bad)
	}
	if info.UserID != Subject(introIssuer, "alice") || !slices.Equal(info.Scopes, []string{"gemini", "other"}) || info.Expiration.IsZero() {
		t.Errorf("info %+v", info)
	}
	// A JWT goes to the issuer's keys, never to the endpoint.
	if _, err := v.Verify(t.Context(), "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln", nil); !errors.Is(err, auth.ErrInvalidToken) || ep.calls.Load() != 1 {
		t.Errorf("a JWT: %v, %d introspection calls, want 1", err, ep.calls.Load())
	}
}

func TestIntrospectionRefuses(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name, body, why string
		issuers         []string
	}{
		{"inactive", `{"active":false}`, "not active", nil},
		{"inactive_with_claims", activeBody(map[string]any{"active": false}), "not active", nil},
		{"wrong_audience", activeBody(map[string]any{"aud": "https://other.example.com/mcp"}), "aud", nil},
		{"no_audience", activeBody(map[string]any{"aud": nil}), "no aud", nil},
		{"audience_not_a_string", activeBody(map[string]any{"aud": 7}), "aud", nil},
		{"expired", activeBody(map[string]any{"exp": now.Add(-time.Minute).Unix()}), "expired", nil},
		{"no_exp", activeBody(map[string]any{"exp": nil}), "no exp", nil},
		{"not_yet_valid", activeBody(map[string]any{"nbf": now.Add(time.Minute).Unix()}), "nbf", nil},
		{"untrusted_issuer", activeBody(map[string]any{"iss": "https://evil.example.com"}), "issuer not trusted", nil},
		{"no_iss_several_issuers", activeBody(map[string]any{"iss": nil}), "several issuers", []string{introIssuer, "https://idp2.example.com"}},
		{"no_sub", activeBody(map[string]any{"sub": nil}), "no sub", nil},
		{"long_sub", activeBody(map[string]any{"sub": strings.Repeat("s", MaxSubjectBytes+1)}), "sub longer", nil},
		{"long_scope", activeBody(map[string]any{"scope": strings.Repeat("gemini ", MaxScopeBytes/7+1)}), "scope longer", nil},
		{"scope_not_a_string", activeBody(map[string]any{"scope": []string{"gemini"}}), "scope", nil},
		{"refresh_token", activeBody(map[string]any{"token_type": "refresh_token"}), "token_type", nil},
		{"sender_constrained", activeBody(map[string]any{"cnf": map[string]string{"jkt": "x"}}), "cnf", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := &introspectionEndpoint{answer: func(string) (int, string) { return 200, tc.body }}
			var log bytes.Buffer
			v := newIntrospecting(t, inProcess(ep), &log, 0, tc.issuers...)
			_, err := v.Verify(t.Context(), opaque, nil)
			if !errors.Is(err, auth.ErrInvalidToken) || !strings.Contains(err.Error(), tc.why) {
				t.Errorf("Verify: %v, want an invalid token error with %q", err, tc.why)
			}
			if strings.Contains(err.Error(), opaque) || strings.Contains(log.String(), opaque) {
				t.Errorf("the token is in the error %q or the log %q", err, log.String())
			}
		})
	}
	t.Run("missing_scope", func(t *testing.T) {
		// The scopes are checked by the guard, as a JWT's: the answer's
		// scopes are those given.
		ep := &introspectionEndpoint{answer: func(string) (int, string) { return 200, activeBody(map[string]any{"scope": "other"}) }}
		info, err := newIntrospecting(t, inProcess(ep), nil, 0).Verify(t.Context(), opaque, nil)
		if err != nil || !slices.Equal(info.Scopes, []string{"other"}) {
			t.Errorf("Verify: %+v, %v; want the scopes [other]", info, err)
		}
	})
	t.Run("no_iss_one_issuer", func(t *testing.T) {
		ep := &introspectionEndpoint{answer: func(string) (int, string) { return 200, activeBody(map[string]any{"iss": nil}) }}
		info, err := newIntrospecting(t, inProcess(ep), nil, 0).Verify(t.Context(), opaque, nil)
		if err != nil || info.UserID != Subject(introIssuer, "alice") {
			t.Errorf("Verify: %+v, %v; want the only issuer's subject alice", info, err)
		}
	})
}

// TestIntrospectionFailures: an endpoint that fails, answers too much or
// too slowly makes an error that is not an invalid token (the request gets
// 500), names neither the token nor the secret, and is not kept.
func TestIntrospectionFailures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		why     string
	}{
		{"server_error", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(500) }, "HTTP 500"},
		{"huge_body", func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, `{"active":true,"sub":"`+strings.Repeat("x", MaxIntrospectionBytes)+`"}`)
		}, "more than"},
		{"not_json", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "<html>") }, "invalid character"},
		{"no_active", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, `{"sub":"alice"}`) }, "no active"},
		{"active_not_a_bool", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, `{"active":"true"}`) }, "cannot unmarshal"},
		{"slow", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, "deadline exceeded"},
		{"redirect", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Host != "elsewhere.example.com" {
				http.Redirect(w, r, "https://elsewhere.example.com/introspect", http.StatusTemporaryRedirect)
				return
			}
			io.WriteString(w, activeBody(nil))
		}, "HTTP 307"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var calls atomic.Int32
				var log bytes.Buffer
				v := newIntrospecting(t, inProcess(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					calls.Add(1)
					tc.handler(w, r)
				})), &log, 0)
				start := time.Now()
				for range 2 {
					_, err := v.Verify(t.Context(), opaque, nil)
					if err == nil || errors.Is(err, auth.ErrInvalidToken) || !strings.Contains(err.Error(), tc.why) {
						t.Errorf("Verify: %v, want an error that is not an invalid token, with %q", err, tc.why)
						continue
					}
					for _, secret := range []string{opaque, introSecret, url.QueryEscape(introSecret), base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(introClient) + ":" + url.QueryEscape(introSecret)))} {
						if strings.Contains(err.Error(), secret) || strings.Contains(log.String(), secret) {
							t.Errorf("%q is in the error %q or the log %q", secret, err, log.String())
						}
					}
				}
				if calls.Load() != 2 {
					t.Errorf("%d calls for two verifications, want 2 (a failure is not kept)", calls.Load())
				}
				if took := time.Since(start); took > 2*FetchTimeout {
					t.Errorf("two verifications took %s, want at most %s", took, 2*FetchTimeout)
				}
			})
		})
	}
}

// TestIntrospectionCache: an answer is kept IntrospectionCacheTTL, an
// active token's no longer than its exp; concurrent requests for one token
// make one call.
func TestIntrospectionCache(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		exp := time.Now().Add(90 * time.Second).Unix()
		answers := map[string]string{
			"good-token-0123456789":  activeBody(map[string]any{"exp": time.Now().Add(time.Hour).Unix()}),
			"short-token-0123456789": activeBody(map[string]any{"exp": exp}),
			"bad-token-0123456789":   `{"active":false}`,
		}
		ep := &introspectionEndpoint{answer: func(tok string) (int, string) { return 200, answers[tok] }}
		v := newIntrospecting(t, inProcess(ep), nil, 0)
		verify := func(tok string) error {
			_, err := v.Verify(t.Context(), tok, nil)
			return err
		}
		want := func(n int32, when string) {
			t.Helper()
			if got := ep.calls.Swap(0); got != n {
				t.Errorf("%s: %d introspection calls, want %d", when, got, n)
			}
		}
		var wg sync.WaitGroup
		for range 10 {
			wg.Go(func() {
				if err := verify("good-token-0123456789"); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		want(1, "ten concurrent verifications of one token")
		for range 3 {
			verify("good-token-0123456789")
			verify("short-token-0123456789")
			if err := verify("bad-token-0123456789"); !errors.Is(err, auth.ErrInvalidToken) {
				t.Errorf("the inactive token: %v", err)
			}
		}
		want(2, "three rounds of three tokens, one kept")
		time.Sleep(IntrospectionCacheTTL + time.Second)
		verify("good-token-0123456789")
		verify("short-token-0123456789")
		verify("bad-token-0123456789")
		want(3, "past the cache's time")
		// The short token's answer is kept until its exp only.
		time.Sleep(time.Until(time.Unix(exp, 0)) + time.Second)
		verify("good-token-0123456789")
		verify("short-token-0123456789")
		want(1, "past the short token's exp")
	})
}

// TestIntrospectionCacheBound: past its size the oldest answer goes.
func TestIntrospectionCacheBound(t *testing.T) {
	ep := &introspectionEndpoint{answer: func(string) (int, string) { return 200, `{"active":false}` }}
	v := newIntrospecting(t, inProcess(ep), nil, 3)
	for i := range 4 {
		v.Verify(t.Context(), fmt.Sprintf("token-%d-0123456789", i), nil)
	}
	if n := len(v.intro.cache); n != 3 || v.intro.order.Len() != 3 {
		t.Errorf("%d answers kept (%d in order), want 3", n, v.intro.order.Len())
	}
	ep.calls.Store(0)
	v.Verify(t.Context(), "token-3-0123456789", nil) // kept
	v.Verify(t.Context(), "token-0-0123456789", nil) // the oldest: gone
	if n := ep.calls.Load(); n != 1 {
		t.Errorf("%d calls, want 1 (token 0 again)", n)
	}
	// The cache is keyed by a hash of the token, never the token.
	for k := range v.intro.cache {
		if bytes.Contains(k[:], []byte("token-")) {
			t.Errorf("a cache key holds the token: %q", k)
		}
	}
}

// TestIntrospectionConcurrency: at most MaxIntrospections requests are in
// flight; the others wait for a slot.
func TestIntrospectionConcurrency(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var inflight, most atomic.Int32
		ep := &introspectionEndpoint{answer: func(string) (int, string) {
			n := inflight.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			<-release
			inflight.Add(-1)
			return 200, activeBody(nil)
		}}
		v := newIntrospecting(t, inProcess(ep), nil, 0)
		var wg sync.WaitGroup
		var ok atomic.Int32
		for i := range 3 * MaxIntrospections {
			wg.Go(func() {
				if _, err := v.Verify(context.Background(), fmt.Sprintf("token-%d-0123456789", i), nil); err == nil {
					ok.Add(1)
				}
			})
		}
		synctest.Wait()
		if n := inflight.Load(); n != MaxIntrospections {
			t.Errorf("%d introspections in flight, want %d", n, MaxIntrospections)
		}
		close(release)
		wg.Wait()
		if most.Load() != MaxIntrospections || ok.Load() != 3*MaxIntrospections {
			t.Errorf("at most %d in flight, %d verified; want %d and %d", most.Load(), ok.Load(), MaxIntrospections, 3*MaxIntrospections)
		}
	})
}

func TestIntrospectionOptionsChecked(t *testing.T) {
	for _, in := range []Introspection{
		{URL: "http://idp.example.com/introspect", ClientID: "c", ClientSecret: introSecret},
		{URL: "https://idp.example.com/introspect?x=1", ClientID: "c", ClientSecret: introSecret},
		{URL: "https://idp.example.com/introspect", ClientSecret: introSecret},
		{URL: "https://idp.example.com/introspect", ClientID: "c"},
	} {
		if _, err := New(Options{Issuers: []string{introIssuer}, Audience: audience, Introspection: &in}); err == nil {
			t.Errorf("New with %+v: no error", in)
		} else if in.ClientSecret != "" && strings.Contains(err.Error(), in.ClientSecret) {
			t.Errorf("the secret is in %q", err)
		}
	}
}

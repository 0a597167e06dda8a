package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// keyIssuer is an authorization server on a loopback port: its metadata
// names its JWKS at /jwks, which a test can hold back (gate) or redirect.
type keyIssuer struct {
	srv      *httptest.Server
	set      []byte // the JWKS served
	gets     atomic.Int32
	gate     atomic.Pointer[func(*http.Request)]
	redirect atomic.Pointer[string]
}

func startKeyIssuer(t *testing.T, addr string) *keyIssuer {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	k := &keyIssuer{}
	k.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-authorization-server":
			json.NewEncoder(w).Encode(map[string]string{"issuer": k.srv.URL, "jwks_uri": k.srv.URL + "/jwks"})
		case "/jwks":
			k.gets.Add(1)
			if g := k.gate.Load(); g != nil {
				(*g)(r)
			}
			if to := k.redirect.Load(); to != nil {
				http.Redirect(w, r, *to, http.StatusFound)
				return
			}
			w.Write(k.set)
		default:
			http.NotFound(w, r)
		}
	}))
	k.srv.Listener.Close()
	k.srv.Listener = l
	k.srv.Start()
	t.Cleanup(k.srv.Close)
	return k
}

// newSigner makes an ES256 key under kid; its public half is returned as
// a JWKS.
func newSigner(t *testing.T, kid string) (jose.Signer, []byte) {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: priv}, (&jose.SignerOptions{}).WithType("at+jwt").WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	set, _ := json.Marshal(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &priv.PublicKey, KeyID: kid, Algorithm: "ES256", Use: "sig"}}})
	return s, set
}

// accessToken is a token of issuer for the server at addr, signed by s.
func accessToken(t *testing.T, s jose.Signer, issuer, addr string) string {
	t.Helper()
	now := time.Now().Unix()
	tok, err := jwt.Signed(s).Claims(map[string]any{"iss": issuer, "sub": "alice", "aud": "http://" + addr + "/mcp",
		"scope": "gemini", "iat": now, "exp": now + 600}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// initializeWith posts an initialize to the server at addr with token and
// returns its status and body.
func initializeWith(t *testing.T, addr, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"keys","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("initialize: %v", err)
		return 0, ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestOAuthKeySetRedirect: the issuer's JWKS URL redirects to plain http
// on another host (127.0.0.2, loopback as well), which serves the key
// that signed the token: the redirect is not followed, the other host is
// not asked and the token is refused. Once the issuer serves the key
// itself, the same token is accepted.
func TestOAuthKeySetRedirect(t *testing.T) {
	t.Parallel()
	idp := startKeyIssuer(t, "127.0.0.1:0")
	other := startKeyIssuer(t, "127.0.0.2:0")
	signer, set := newSigner(t, "k1")
	idp.set, other.set = []byte(`{"keys":[]}`), set
	to := other.srv.URL + "/jwks"
	idp.redirect.Store(&to)
	e := newEnv(t)
	e.vars = append(e.vars, "GEMINI_MCP_AUTH_ISSUER="+idp.srv.URL)
	addr, _ := startHTTP(t, e)
	token := accessToken(t, signer, idp.srv.URL, addr)
	if status, body := initializeWith(t, addr, token); status == http.StatusOK {
		t.Errorf("a token signed by a key served behind a redirect to another host: %d %s", status, body)
	}
	if n := other.gets.Load(); n != 0 {
		t.Errorf("the other host was asked for its keys %d times", n)
	}
	idp.redirect.Store(nil)
	idp.set = set
	if status, body := initializeWith(t, addr, token); status != http.StatusOK {
		t.Errorf("the token, its key served by the issuer: %d %s", status, body)
	}
}

// TestOAuthSlowKeySet: while the issuer holds back the JWKS fetch that a
// token of an unknown key id started, a token signed with a key the
// server already has is accepted, without waiting for that fetch; the
// token of the unknown key gets its answer once the fetch ends.
func TestOAuthSlowKeySet(t *testing.T) {
	t.Parallel()
	idp := startKeyIssuer(t, "127.0.0.1:0")
	known, set := newSigner(t, "known")
	unknown, _ := newSigner(t, "unknown")
	idp.set = set
	e := newEnv(t)
	e.vars = append(e.vars, "GEMINI_MCP_AUTH_ISSUER="+idp.srv.URL)
	addr, _ := startHTTP(t, e)
	knownToken := accessToken(t, known, idp.srv.URL, addr)
	if status, body := initializeWith(t, addr, knownToken); status != http.StatusOK {
		t.Fatalf("a token of the issuer's key: %d %s", status, body)
	}

	entered, release, gateEnded := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var once sync.Once
	gate := func(r *http.Request) {
		once.Do(func() {
			close(entered)
			defer close(gateEnded)
			select {
			case <-release:
			case <-r.Context().Done():
			}
		})
	}
	idp.gate.Store(&gate)
	unknownDone := make(chan int, 1)
	go func() {
		status, _ := initializeWith(t, addr, accessToken(t, unknown, idp.srv.URL, addr))
		unknownDone <- status
	}()
	<-entered // the server's fetch of the keys is held back

	if status, body := initializeWith(t, addr, knownToken); status != http.StatusOK {
		t.Errorf("a token of a kept key, during the fetch: %d %s", status, body)
	}
	select {
	case <-gateEnded:
		t.Error("the token of a kept key was answered only once the key-set fetch had ended")
	case status := <-unknownDone:
		t.Errorf("the token of an unknown key was answered (%d) before the key-set fetch ended", status)
	default:
	}
	close(release)
	if status := <-unknownDone; status != http.StatusUnauthorized {
		t.Errorf("the token of a key the issuer does not list: %d, want 401", status)
	}
	if n := idp.gets.Load(); n != 2 {
		t.Errorf("%d fetches of the JWKS, want 2", n)
	}
}

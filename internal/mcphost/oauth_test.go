package mcphost

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/redact"
)

func TestParseOAuthConfig(t *testing.T) {
	data := `{"mcpServers":{
  "gh": {"httpUrl": "https://mcp.example.test/mcp", "oauth": {"enabled": true, "clientId": "cid", "clientSecret": "$CS",
    "authorizationUrl": "https://id.example.test/authorize", "tokenUrl": "https://id.example.test/token",
    "scopes": ["repo", "${SCOPE}"], "audiences": ["api"], "redirectUri": "http://localhost:7777/cb", "registrationUrl": "https://id.example.test/reg"}},
  "g": {"httpUrl": "https://x.googleapis.com/mcp", "authProviderType": "google_credentials", "oauth": {"scopes": ["https://www.googleapis.com/auth/cloud-platform"]}},
  "sa": {"url": "https://run.example.test/mcp", "authProviderType": "service_account_impersonation", "targetAudience": "aud", "targetServiceAccount": "sa@p.iam.gserviceaccount.com"},
  "plain": {"httpUrl": "https://plain.example.test/mcp"}
}}`
	cfg, err := ParseConfig([]byte(data), env(map[string]string{"CS": "client-secret-123456", "SCOPE": "read"}))
	if err != nil {
		t.Fatal(err)
	}
	gh := cfg.Servers[0]
	o := gh.OAuth
	if o == nil || !o.Enabled || o.ClientID != "cid" || o.ClientSecret != "client-secret-123456" || o.TokenURL != "https://id.example.test/token" ||
		strings.Join(o.Scopes, " ") != "repo read" || o.RedirectURI != "http://localhost:7777/cb" || o.RegistrationURL != "https://id.example.test/reg" ||
		gh.AuthProvider != AuthDynamicDiscovery {
		t.Errorf("gh: %+v %+v", gh, o)
	}
	if cfg.Servers[1].AuthProvider != AuthGoogleCredentials || cfg.Servers[2].TargetServiceAccount != "sa@p.iam.gserviceaccount.com" {
		t.Errorf("google providers: %+v %+v", cfg.Servers[1], cfg.Servers[2])
	}
	if cfg.Servers[3].OAuth != nil || len(cfg.Warnings) != 0 {
		t.Errorf("plain: %+v, warnings %v", cfg.Servers[3], cfg.Warnings)
	}
	if s := Secrets(cfg); !strings.Contains(strings.Join(s, " "), "client-secret-123456") {
		t.Errorf("the client secret is not among the secrets to mask: %v", s)
	}
}

func TestParseOAuthConfigErrors(t *testing.T) {
	for _, tc := range []struct{ server, want string }{
		{`{"httpUrl":"https://h/mcp","oauth":{"clientID":"x"}}`, `mcpServers.db.oauth: must be an object of enabled, clientId`},
		{`{"httpUrl":"https://h/mcp","oauth":"yes"}`, `mcpServers.db.oauth: must be an object`},
		{`{"httpUrl":"https://h/mcp","oauth":{"tokenUrl":"ftp://h/t","authorizationUrl":"https://h/a"}}`, `mcpServers.db.oauth.tokenUrl: must be an https:// URL`},
		{`{"httpUrl":"https://h/mcp","oauth":{"authorizationUrl":"https://h/a"}}`, `authorizationUrl and tokenUrl go together`},
		{`{"httpUrl":"https://h/mcp","oauth":{"redirectUri":"http://evil.example/cb"}}`, `mcpServers.db.oauth.redirectUri: must be an http:// URL on localhost`},
		{`{"httpUrl":"https://h/mcp","oauth":{"redirectUri":"https://localhost/cb"}}`, `mcpServers.db.oauth.redirectUri`},
		{`{"httpUrl":"https://h/mcp","authProviderType":"magic"}`, `must be dynamic_discovery, google_credentials or service_account_impersonation`},
		{`{"httpUrl":"https://evil.example/mcp","authProviderType":"google_credentials","oauth":{"scopes":["s"]}}`, `only to *.googleapis.com and *.luci.app servers`},
		{`{"httpUrl":"https://evil.googleapis.com.example/mcp","authProviderType":"google_credentials","oauth":{"scopes":["s"]}}`, `only to *.googleapis.com`},
		{`{"httpUrl":"https://x.googleapis.com/mcp","authProviderType":"google_credentials"}`, `google_credentials needs the scopes`},
		{`{"command":"x","authProviderType":"google_credentials"}`, `needs url or httpUrl`},
		{`{"httpUrl":"https://h/mcp","authProviderType":"service_account_impersonation","targetAudience":"a"}`, `needs targetAudience`},
		{`{"httpUrl":"https://h/mcp","targetAudience":1}`, `mcpServers.db.targetAudience: must be a string`},
	} {
		_, err := ParseConfig([]byte(`{"mcpServers":{"db":`+tc.server+`}}`), env(nil))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.server, err, tc.want)
		}
	}
}

func TestTokenFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	f := &TokenFile{Path: filepath.Join(dir, "tokens.json")}
	ctx := context.Background()
	if tok, err := f.Load(ctx, "https://a/mcp"); tok != nil || err != nil {
		t.Fatalf("empty store: %v %v", tok, err)
	}
	now := time.Now()
	for i, iss := range []string{"https://old", "https://new"} {
		if err := f.Save(ctx, &Token{Server: "https://a/mcp", Issuer: iss, AccessToken: "at-" + iss, Updated: now.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Save(ctx, &Token{Server: "https://b/mcp", Issuer: "https://old", AccessToken: "other"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Save(ctx, &Token{Server: "https://a/mcp"}); err == nil {
		t.Error("a token without an issuer was kept")
	}
	tok, err := f.Load(ctx, "https://a/mcp")
	if err != nil || tok == nil || tok.Issuer != "https://new" {
		t.Fatalf("newest token: %+v %v", tok, err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, f.Path: 0o600} {
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", path, fi.Mode().Perm(), err, want)
		}
	}
	stale := *tok
	stale.AccessToken = "another process's since"
	if err := f.Forget(ctx, &stale); err != nil {
		t.Fatal(err)
	}
	if kept, _ := f.Load(ctx, "https://a/mcp"); kept == nil || kept.Issuer != "https://new" {
		t.Fatalf("forgetting a token no longer kept removed the kept one: %+v", kept)
	}
	if err := f.Forget(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if tok, _ := f.Load(ctx, "https://a/mcp"); tok == nil || tok.Issuer != "https://old" {
		t.Errorf("after deleting the newest: %+v", tok)
	}

	// Two stores on one file (two processes) lose no save.
	g := &TokenFile{Path: f.Path}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := []*TokenFile{f, g}[i%2]
			if err := s.Save(ctx, &Token{Server: fmt.Sprintf("https://s%d/mcp", i), Issuer: "https://i", AccessToken: "x"}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for i := range 20 {
		if tok, _ := f.Load(ctx, fmt.Sprintf("https://s%d/mcp", i)); tok == nil {
			t.Errorf("save %d was lost", i)
		}
	}

	// A file others may read, a huge one and a foreign one are refused.
	os.Chmod(f.Path, 0o644)
	if _, err := f.Load(ctx, "https://a/mcp"); err == nil || !strings.Contains(err.Error(), "must be 0600") {
		t.Errorf("a 0644 token file: %v", err)
	}
	os.Chmod(f.Path, 0o600)
	os.WriteFile(f.Path, []byte(strings.Repeat(" ", maxTokenFileBytes+1)), 0o600)
	if _, err := f.Load(ctx, "https://a/mcp"); err == nil || !strings.Contains(err.Error(), "over") {
		t.Errorf("a huge token file: %v", err)
	}
	os.WriteFile(f.Path, []byte(`["not", "ours"]`), 0o600)
	if err := f.Save(ctx, &Token{Server: "https://a/mcp", Issuer: "https://i"}); err == nil || !strings.Contains(err.Error(), "not the host's token file") {
		t.Errorf("a foreign token file: %v", err)
	}
	if data, _ := os.ReadFile(f.Path); string(data) != `["not", "ours"]` {
		t.Errorf("a failed save changed the file: %s", data)
	}
}

func TestOAuthEndpointRule(t *testing.T) {
	remote, local := newOAuthClient("https://mcp.example.test/mcp"), newOAuthClient("http://127.0.0.1:8080/mcp")
	for _, tc := range []struct {
		c   *oauthClient
		url string
		ok  bool
	}{
		{remote, "https://id.example.test/token", true},
		{remote, "http://id.example.test/token", false},
		{remote, "https://127.0.0.1/token", false},
		{remote, "https://[::1]/token", false},
		{remote, "https://169.254.169.254/latest/meta-data", false},
		{remote, "https://10.1.2.3/token", false},
		{remote, "https://[fe80::1]/token", false},
		{remote, "https://0.0.0.0/token", false},
		{remote, "file:///etc/passwd", false},
		{local, "http://127.0.0.1:9000/token", true},
		{local, "http://localhost:9000/token", true},
		{local, "http://id.example.test/token", false},
		{local, "https://10.1.2.3/token", true},
	} {
		u, _ := url.Parse(tc.url)
		if err := tc.c.checkURL(u); (err == nil) != tc.ok {
			t.Errorf("local=%v %s: %v, want allowed=%v", tc.c.local, tc.url, err, tc.ok)
		}
	}
	// A name that resolves to loopback is refused where it is dialed.
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "{}") }))
	defer srv.Close()
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	_, err := remote.HTTP().Get("https://localhost:" + port + "/.well-known/oauth-authorization-server")
	if err == nil || !strings.Contains(err.Error(), "is refused") {
		t.Errorf("a remote server's endpoint on localhost: %v", err)
	}
	if blockedAddr(netip.MustParseAddr("10.0.0.1"), false) {
		t.Error("a name resolving to a private address is refused (company identity providers are)")
	}
}

// tokenServer is a token endpoint that answers refreshes with answer.
func tokenServer(t *testing.T, status int, answer string) (*httptest.Server, *atomic.Int32) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		r.ParseForm()
		if r.Form.Get("grant_type") != "refresh_token" || r.Form.Get("resource") != "http://127.0.0.1:1/mcp" || r.Form.Get("client_id") != "cid" {
			http.Error(w, `{"error":"invalid_request"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, answer)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func testAuth(t *testing.T, tokenURL string, store TokenStore) *serverAuth {
	cfg := ServerConfig{Name: "down", HTTPURL: "http://127.0.0.1:1/mcp"}
	store.Save(context.Background(), &Token{Server: cfg.HTTPURL, Issuer: "http://127.0.0.1", ClientID: "cid", AuthMethod: "none", TokenURL: tokenURL,
		AccessToken: "old-access", RefreshToken: "refresh-1", Expiry: time.Now().Add(-time.Minute), Updated: time.Now()})
	return newServerAuth(cfg, store, redact.New(), nil)
}

func TestRefresh(t *testing.T) {
	ctx := context.Background()
	srv, calls := tokenServer(t, http.StatusOK, `{"access_token":"new-access","token_type":"bearer","expires_in":3600,"refresh_token":"refresh-2"}`)
	store := &MemoryTokens{}
	a := testAuth(t, srv.URL, store)
	tok, err := a.current(ctx)
	if err != nil || tok != "new-access" {
		t.Fatalf("current: %q %v", tok, err)
	}
	if tok, _ := a.current(ctx); tok != "new-access" || calls.Load() != 1 {
		t.Errorf("a fresh token was refreshed again (%d calls)", calls.Load())
	}
	kept, _ := store.Load(ctx, "http://127.0.0.1:1/mcp")
	if kept.AccessToken != "new-access" || kept.RefreshToken != "refresh-2" || time.Until(kept.Expiry) < 59*time.Minute {
		t.Errorf("kept %+v", kept)
	}
	if got := a.red.String("x new-access refresh-2 y"); strings.Contains(got, "new-access") || strings.Contains(got, "refresh-2") {
		t.Errorf("the new tokens are not masked: %s", got)
	}
}

func TestRefreshRefusedNeedsSignIn(t *testing.T) {
	ctx := context.Background()
	srv, _ := tokenServer(t, http.StatusBadRequest, `{"error":"invalid_grant","error_description":"grant revoked"}`)
	store := &MemoryTokens{}
	a := testAuth(t, srv.URL, store)
	_, err := a.current(ctx)
	var ns *NeedsSignInError
	if !errors.As(err, &ns) || !strings.Contains(err.Error(), "run `gemini-mcp-server mcp auth down`") {
		t.Fatalf("current: %v, want needs sign-in", err)
	}
	if kept, _ := store.Load(ctx, "http://127.0.0.1:1/mcp"); kept != nil {
		t.Errorf("the refused token is still kept: %+v", kept)
	}
	if a.needsSignIn() == nil {
		t.Error("the server is not marked as needing a sign-in")
	}
}

func TestRefreshHostileAnswers(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		status       int
		want         string
	}{
		{"huge", `{"access_token":"` + strings.Repeat("x", maxOAuthBodyBytes) + `"}`, http.StatusOK, "OAuth answer over"},
		{"not JSON", `<html>`, http.StatusOK, "not JSON"},
		{"no token", `{"token_type":"bearer"}`, http.StatusOK, "no access_token"},
		{"not bearer", `{"access_token":"a","token_type":"mac"}`, http.StatusOK, "only bearer tokens"},
		{"server error", `{"error":"temporarily_unavailable"}`, http.StatusServiceUnavailable, "answered 503"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := tokenServer(t, tc.status, tc.answer)
			store := &MemoryTokens{}
			a := testAuth(t, srv.URL, store)
			_, err := a.current(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "refresh-1") {
				t.Errorf("error %v, want %q", err, tc.want)
			}
			if kept, _ := store.Load(context.Background(), "http://127.0.0.1:1/mcp"); kept == nil || kept.RefreshToken != "refresh-1" {
				t.Errorf("a failed refresh lost the kept token: %+v", kept)
			}
			if a.needsSignIn() != nil {
				t.Error("a transient failure asks for a new sign-in")
			}
		})
	}
}

// TestTokenStaysWithItsServer: the access token goes to the server's own
// origin only, not to another host a request of the session is sent to
// (an SSE endpoint event or a redirect may name one).
func TestTokenStaysWithItsServer(t *testing.T) {
	got := make(chan string, 2)
	srv := func() *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got <- r.Header.Get("Authorization") }))
		t.Cleanup(s.Close)
		return s
	}
	own, other := srv(), srv()
	store := &MemoryTokens{}
	cfg := ServerConfig{Name: "down", HTTPURL: own.URL + "/mcp"}
	store.Save(context.Background(), &Token{Server: cfg.HTTPURL, Issuer: "https://i", AccessToken: "secret-access", Updated: time.Now()})
	var overflow atomic.Bool
	c := &http.Client{Transport: &headerTransport{origin: origin(cfg.HTTPURL), base: http.DefaultTransport, overflow: &overflow, auth: newServerAuth(cfg, store, redact.New(), nil)}}
	for _, u := range []string{own.URL + "/mcp", other.URL + "/mcp"} {
		res, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	if a, b := <-got, <-got; a != "Bearer secret-access" || b != "" {
		t.Errorf("own origin got %q, another got %q", a, b)
	}
}

// TestServerRefusingFreshTokens: a server that answers 401 to every token
// gets one refresh a minute, not one per request, and then needs a
// sign-in.
func TestServerRefusingFreshTokens(t *testing.T) {
	ctx := context.Background()
	srv, calls := tokenServer(t, http.StatusOK, `{"access_token":"fresh","token_type":"Bearer","expires_in":3600}`)
	a := testAuth(t, srv.URL, &MemoryTokens{})
	if _, err := a.current(ctx); err != nil || calls.Load() != 1 {
		t.Fatalf("first refresh: %v (%d calls)", err, calls.Load())
	}
	refuse := func() (bool, error) {
		res := &http.Response{StatusCode: http.StatusUnauthorized, Header: http.Header{}, Body: http.NoBody}
		req, _ := http.NewRequest(http.MethodPost, "http://127.0.0.1:1/mcp", nil)
		return a.unauthorized(ctx, req, res, "fresh")
	}
	if again, err := refuse(); !again || err != nil || calls.Load() != 2 {
		t.Fatalf("the first 401: again=%v %v (%d calls)", again, err, calls.Load())
	}
	for range 5 {
		if again, err := refuse(); again || err == nil {
			t.Fatalf("a 401 within the minute: again=%v %v", again, err)
		}
	}
	if calls.Load() != 2 {
		t.Errorf("%d refreshes for 7 refusals in a minute, want 2", calls.Load())
	}
	if a.needsSignIn() == nil {
		t.Errorf("the server is not marked as needing a sign-in")
	}
}

// TestRefreshSharedWithAReplica: two hosts share the store (replicas on
// Redis, or `mcp auth` and the server). The authorization server rotates
// refresh tokens, so once one host has refreshed, the other's refresh
// token is refused: it takes the kept token up instead of refreshing
// with its stale one, and never forgets the grant the first one keeps.
func TestRefreshSharedWithAReplica(t *testing.T) {
	ctx := context.Background()
	var mu sync.Mutex
	current, n := "refresh-1", 0
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		r.ParseForm()
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.Form.Get("refresh_token") != current {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_grant"}`)
			return
		}
		n++
		current = fmt.Sprintf("refresh-%d", n+1)
		fmt.Fprintf(w, `{"access_token":"access-%d","token_type":"Bearer","expires_in":3600,"refresh_token":%q}`, n, current)
	}))
	defer srv.Close()
	store := &MemoryTokens{}
	a := testAuth(t, srv.URL, store)
	// b read the token before a refreshed it.
	b := newServerAuth(a.cfg, store, redact.New(), nil)
	stale, _ := store.Load(ctx, a.cfg.HTTPURL)
	b.loaded, b.tok = true, stale
	if tok, err := a.current(ctx); err != nil || tok != "access-1" {
		t.Fatalf("a: %q %v", tok, err)
	}
	if tok, err := b.current(ctx); err != nil || tok != "access-1" {
		t.Fatalf("b after a's refresh: %q %v", tok, err)
	}
	if calls.Load() != 1 {
		t.Errorf("%d refreshes, want a's one", calls.Load())
	}
	if kept, _ := store.Load(ctx, a.cfg.HTTPURL); kept == nil || kept.RefreshToken != "refresh-2" {
		t.Errorf("kept %+v, want a's refreshed token", kept)
	}
	if b.needsSignIn() != nil {
		t.Error("b asks for a sign-in")
	}
}

// forgetHook is a TokenStore that runs before ahead of each Forget.
type forgetHook struct {
	TokenStore
	before func()
}

func (h *forgetHook) Forget(ctx context.Context, t *Token) error {
	h.before()
	return h.TokenStore.Forget(ctx, t)
}

// TestRefusedRefreshKeepsAReplicasToken: a host's refresh token is
// refused because another host refreshed first, and that host's new
// token is kept only after this one looked at the store, just before it
// forgets its refused token. The forget leaves the other host's token,
// and this host takes it up instead of asking for a sign-in.
func TestRefusedRefreshKeepsAReplicasToken(t *testing.T) {
	ctx := context.Background()
	srv, _ := tokenServer(t, http.StatusBadRequest, `{"error":"invalid_grant","error_description":"refresh token already used"}`)
	mem := &MemoryTokens{}
	a := testAuth(t, srv.URL, mem)
	old, _ := mem.Load(ctx, a.cfg.HTTPURL)
	replicas := *old
	replicas.AccessToken, replicas.RefreshToken, replicas.Expiry = "replica-access", "refresh-2", time.Now().Add(time.Hour)
	store := &forgetHook{TokenStore: mem, before: func() {
		if err := mem.Save(ctx, &replicas); err != nil {
			t.Error(err)
		}
	}}
	a.store = store
	tok, err := a.current(ctx)
	if err != nil || tok != "replica-access" {
		t.Fatalf("current: %q %v, want the replica's token", tok, err)
	}
	if kept, _ := mem.Load(ctx, a.cfg.HTTPURL); kept == nil || kept.RefreshToken != "refresh-2" {
		t.Fatalf("kept %+v: the replica's token was forgotten", kept)
	}
	if a.needsSignIn() != nil {
		t.Error("the host asks for a sign-in")
	}
}

// loadHook is a TokenStore that runs before ahead of the nth Load.
type loadHook struct {
	TokenStore
	n      int
	loads  int
	before func()
}

func (h *loadHook) Load(ctx context.Context, server string) (*Token, error) {
	h.loads++
	if h.loads == h.n {
		h.before()
	}
	return h.TokenStore.Load(ctx, server)
}

// TestRefusedRefreshAwaitsAReplicasSave: another host's refresh refused
// this host's refresh token, and that host keeps its new token a moment
// later (after this host's first look at the store, while it looks
// again): this host takes that token up, and forgets nothing.
func TestRefusedRefreshAwaitsAReplicasSave(t *testing.T) {
	ctx := context.Background()
	srv, _ := tokenServer(t, http.StatusBadRequest, `{"error":"invalid_grant"}`)
	mem := &MemoryTokens{}
	a := testAuth(t, srv.URL, mem)
	old, _ := mem.Load(ctx, a.cfg.HTTPURL)
	replicas := *old
	replicas.AccessToken, replicas.RefreshToken, replicas.Expiry = "replica-access", "refresh-2", time.Now().Add(time.Hour)
	// Loads: the first token, the look before the refresh, the first
	// look after the refusal; the replica's save lands before the fourth.
	a.store = &loadHook{TokenStore: mem, n: 4, before: func() {
		if err := mem.Save(ctx, &replicas); err != nil {
			t.Error(err)
		}
	}}
	tok, err := a.current(ctx)
	if err != nil || tok != "replica-access" {
		t.Fatalf("current: %q %v, want the replica's token", tok, err)
	}
	if kept, _ := mem.Load(ctx, a.cfg.HTTPURL); kept == nil || kept.RefreshToken != "refresh-2" {
		t.Fatalf("kept %+v, want the replica's token", kept)
	}
}

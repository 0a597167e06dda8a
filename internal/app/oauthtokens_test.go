package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/mcphost"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// TestTokenStoreRedis: with a Redis --store, the MCP host's tokens are
// kept there (no token file), where a second process with another state
// directory finds them: the newest of a server's issuers, the older once
// the newest is deleted; the store is closed by the close returned.
func TestTokenStoreRedis(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	cfgA := parseStore(t, "--store", srv.URL(0), "--store-prefix", "gm:")
	a, closeA, err := tokenStore(cfgA)
	if err != nil {
		t.Fatal(err)
	}
	defer closeA()
	if _, ok := a.(*lazyTokens); !ok {
		t.Fatalf("tokenStore is a %T, want the session store's", a)
	}
	const server = "https://mcp.example.com/mcp"
	if got, err := a.Load(ctx, server); err != nil || got != nil {
		t.Fatalf("nothing kept: %v %v", got, err)
	}
	now := time.Now().UTC().Truncate(time.Second)
	older := &mcphost.Token{Server: server, Issuer: "https://idp-a.example.com", ClientID: "c", AccessToken: "at-older", RefreshToken: "rt-older", Updated: now.Add(-time.Hour)}
	newer := &mcphost.Token{Server: server, Issuer: "https://idp-b.example.com", ClientID: "c", AccessToken: "at-newer", Updated: now, Expiry: now.Add(time.Hour), Scopes: []string{"read"}}
	for _, tok := range []*mcphost.Token{newer, older} {
		if err := a.Save(ctx, tok); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Save(ctx, &mcphost.Token{Server: server}); err == nil {
		t.Error("a token without an issuer was saved")
	}

	// Another process: another state directory, the same store.
	cfgB := parseStore(t, "--store", srv.URL(0), "--store-prefix", "gm:")
	b, closeB, err := tokenStore(cfgB)
	if err != nil {
		t.Fatal(err)
	}
	defer closeB()
	got, err := b.Load(ctx, server)
	if err != nil || got == nil || got.AccessToken != "at-newer" || !got.Expiry.Equal(newer.Expiry) || len(got.Scopes) != 1 {
		t.Fatalf("the other process loads %+v, %v; want the newer token", got, err)
	}
	// Forgetting a token that is no longer the one kept leaves the kept
	// one: another process refreshed it meanwhile.
	stale := *got
	stale.RefreshToken, stale.AccessToken = "rt-stale", "at-stale"
	if err := b.Forget(ctx, &stale); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Load(ctx, server); err != nil || got == nil || got.AccessToken != "at-newer" {
		t.Fatalf("after forgetting a stale token: %+v, %v; want the newer token kept", got, err)
	}
	if err := b.Forget(ctx, got); err != nil {
		t.Fatal(err)
	}
	if got, err := a.Load(ctx, server); err != nil || got == nil || got.AccessToken != "at-older" || got.RefreshToken != "rt-older" {
		t.Fatalf("after the delete: %+v, %v; want the older token", got, err)
	}
	for _, cfg := range []string{cfgA.Store.StateDir, cfgB.Store.StateDir} {
		if _, err := os.Stat(filepath.Join(cfg, TokenFileName)); !os.IsNotExist(err) {
			t.Errorf("a token file was written in %s: %v", cfg, err)
		}
	}
	keys := plainRedis(t, srv).Keys(ctx, "gm:oauth:*").Val()
	if len(keys) != 1 || keys[0] != "gm:oauth:"+server {
		t.Errorf("keys %q, want the server's hash under the prefix", keys)
	}

	// The server's own host uses the session store it has opened.
	st, _, err := openStore(ctx, cfgA, false, session.OpeningHooks{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if s, err := serverTokens(cfgA, st); err != nil {
		t.Fatal(err)
	} else if got, err := s.Load(ctx, server); err != nil || got == nil || got.AccessToken != "at-older" {
		t.Errorf("the server's token store loads %+v, %v", got, err)
	}
	closeA()
	if _, err := a.Load(ctx, server); err == nil {
		t.Error("the store is still open after its close")
	}
}

// TestTokenStoreFile: other stores keep the tokens in the state
// directory's file.
func TestTokenStoreFile(t *testing.T) {
	for _, store := range []string{"", "memory:", "sqlite:" + filepath.Join(t.TempDir(), "s.db")} {
		cfg := parseStore(t, "--store", store)
		tok, closeTok, err := tokenStore(cfg)
		if err != nil {
			t.Fatal(err)
		}
		closeTok()
		if f, ok := tok.(*mcphost.TokenFile); !ok || f.Path != filepath.Join(cfg.Store.StateDir, TokenFileName) {
			t.Errorf("--store %q: tokens in %#v, want the state directory's file", store, tok)
		}
		st := memstore.New(session.Options{})
		defer st.Close()
		if s, err := serverTokens(cfg, st); err != nil {
			t.Error(err)
		} else if _, ok := s.(*mcphost.TokenFile); !ok {
			t.Errorf("--store %q: the server keeps tokens in %T", store, s)
		}
	}
}

// TestTokenStoreRedisErrors: a token that is not one this server wrote
// (not JSON, another server's, a huge value) is an error that names the
// store, its password hidden, and quotes no token; so is a Redis that is
// unreachable.
func TestTokenStoreRedisErrors(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	c := plainRedis(t, srv)
	if err := c.ConfigSet(ctx, "requirepass", "pw-s3cret").Err(); err != nil {
		t.Fatal(err)
	}
	c = redis.NewClient(&redis.Options{Addr: srv.Addr(), Password: "pw-s3cret", MaxRetries: -1})
	defer c.Close()
	url := strings.Replace(srv.URL(0), "redis://", "redis://:pw-s3cret@", 1)
	cfg := parseStore(t, "--store", url)
	tokens, closeTokens, err := tokenStore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer closeTokens()
	const server = "https://mcp.example.com/mcp"
	key := "gemini-mcp:oauth:" + server
	if cfg.Store.Prefix != "gemini-mcp:" {
		t.Fatalf("the default prefix is %q", cfg.Store.Prefix)
	}
	for name, value := range map[string]string{
		"not JSON":       `{"access_token":"at-secret-1",`,
		"another server": `{"server":"https://other.example.com","issuer":"https://idp.example.com","access_token":"at-secret-1"}`,
		"huge":           `{"access_token":"at-secret-1","x":"` + strings.Repeat("x", 70<<10) + `"}`,
	} {
		c.Del(ctx, key)
		c.HSet(ctx, key, "https://idp.example.com", value)
		got, err := tokens.Load(ctx, server)
		if err == nil || got != nil {
			t.Errorf("%s: %+v, %v", name, got, err)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, "at-secret") || strings.Contains(msg, "pw-s3cret") || !strings.Contains(msg, "xxxxx@"+srv.Addr()) {
			t.Errorf("%s: the error %q quotes a secret or does not name the store", name, msg)
		}
	}

	// The store opens with the first call that needs it: a wrong
	// password is that call's error.
	wrong, closeWrong, err := tokenStore(parseStore(t, "--store", strings.Replace(url, "pw-s3cret", "pw-wrong", 1)))
	if err != nil {
		t.Fatal(err)
	}
	defer closeWrong()
	if _, err := wrong.Load(ctx, server); err == nil || strings.Contains(err.Error(), "pw-wrong") || !strings.Contains(err.Error(), "xxxxx@"+srv.Addr()) {
		t.Errorf("a wrong password: %v", err)
	}
	srv.Kill()
	if err := tokens.Save(ctx, &mcphost.Token{Server: server, Issuer: "https://idp.example.com", AccessToken: "at-secret-2"}); err == nil ||
		strings.Contains(err.Error(), "at-secret") || strings.Contains(err.Error(), "pw-s3cret") || !strings.Contains(err.Error(), "xxxxx@"+srv.Addr()) {
		t.Errorf("saving to a Redis that is gone: %v", err)
	}
}

func plainRedis(t *testing.T, srv *redistest.Server) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestTokenStoreOpensOnUse: `mcp list` and `mcp auth` need Redis only for
// a server that needs a token: an unreachable Redis is the error of the
// first call that does, naming the store without its password; after
// close, calls fail.
func TestTokenStoreOpensOnUse(t *testing.T) {
	tokens, closeTokens, err := tokenStore(parseStore(t, "--store", "redis://:pw-s3cret@127.0.0.1:1/0"))
	if err != nil {
		t.Fatalf("tokenStore dialled Redis: %v", err)
	}
	_, err = tokens.Load(t.Context(), "https://mcp.example.com/mcp")
	if !errors.Is(err, session.ErrUnavailable) || strings.Contains(err.Error(), "pw-s3cret") || !strings.Contains(err.Error(), "redis://:xxxxx@127.0.0.1:1/0") {
		t.Errorf("Load with Redis unreachable: %v", err)
	}
	closeTokens()
	if err := tokens.Save(t.Context(), &mcphost.Token{Server: "https://mcp.example.com/mcp", Issuer: "https://idp.example.com"}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("Save after close: %v", err)
	}
}

// TestTokenStoreRedisRefreshLock: processes sharing a Redis store refresh
// a server's token of an issuer one at a time (the authorization server
// revokes the grant when a rotated refresh token is spent twice): while
// one holds the refresh, another waits (here until its context ends),
// and takes it once the first lets go; another issuer's refresh does not
// wait.
func TestTokenStoreRedisRefreshLock(t *testing.T) {
	srv := redistest.Start(t)
	ctx := t.Context()
	const server, issuer = "https://mcp.example.com/mcp", "https://idp.example.com"
	locker := func() mcphost.RefreshLocker {
		tokens, closeTokens, err := tokenStore(parseStore(t, "--store", srv.URL(0), "--store-prefix", "gm:"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(closeTokens)
		l, ok := tokens.(mcphost.RefreshLocker)
		if !ok {
			t.Fatalf("%T cannot lock a refresh", tokens)
		}
		return l
	}
	a, b := locker(), locker()
	unlock, err := a.LockRefresh(ctx, server, issuer)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	if _, err := b.LockRefresh(wctx, server, issuer); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("b's refresh while a's holds: %v, want it to wait", err)
	}
	cancel()
	other, err := b.LockRefresh(ctx, server, "https://other-idp.example.com")
	if err != nil {
		t.Fatalf("another issuer's refresh: %v", err)
	}
	other()
	unlock()
	unlockB, err := b.LockRefresh(ctx, server, issuer)
	if err != nil {
		t.Fatalf("b's refresh once a's is over: %v", err)
	}
	unlockB()
	if keys := plainRedis(t, srv).Keys(ctx, "gm:*lease*").Val(); len(keys) != 0 {
		t.Errorf("leases left: %q", keys)
	}
}

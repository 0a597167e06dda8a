package app

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/mcphost"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// TokenFileName is the file, in the state directory, where the MCP host
// keeps its OAuth tokens when the session store is not Redis.
const TokenFileName = "mcp-oauth-tokens.json"

// oauthTokenBytes is what a session store that keeps the MCP host's OAuth
// tokens offers (the Redis store): each token as bytes, by server URL and
// issuer.
type oauthTokenBytes interface {
	LoadOAuthTokens(ctx context.Context, server string) (map[string][]byte, error)
	SaveOAuthToken(ctx context.Context, server, issuer string, value []byte) error
	DeleteOAuthToken(ctx context.Context, server, issuer string, stale func(value []byte) bool) (bool, error)
}

// sharesTokens says whether the store URL names a store that replicas
// share, which then keeps the MCP host's OAuth tokens: Redis (one, a
// cluster or Sentinel's).
func sharesTokens(storeURL string) bool {
	scheme, _, _ := strings.Cut(storeURL, ":")
	scheme = strings.ToLower(scheme)
	scheme, _, _ = strings.Cut(scheme, "+")
	return scheme == "redis" || scheme == "rediss"
}

// tokenStore is where `mcp auth` and `mcp list` find the MCP host's OAuth
// tokens: in the Redis session store when --store is one, else in a 0600
// file in the state directory, which they share with the server. The
// store is opened when a token is first needed, so that a listing of
// servers that need none does not need Redis; close closes it.
func tokenStore(cfg *config.Config) (tokens mcphost.TokenStore, close func(), err error) {
	if !sharesTokens(cfg.Store.URL) {
		t, err := tokenFile(cfg)
		return t, func() {}, err
	}
	l := &lazyTokens{cfg: cfg}
	return l, l.close, nil
}

// lazyTokens is the session store's tokens, opened by the first call that
// needs them (again by the next call when that fails).
type lazyTokens struct {
	cfg    *config.Config
	mu     sync.Mutex
	st     session.Store
	tokens *storeTokens
	closed bool
}

func (l *lazyTokens) open(ctx context.Context) (*storeTokens, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.closed:
		return nil, fmt.Errorf("the session store %s is closed", redactStore(l.cfg.Store.URL))
	case l.tokens != nil:
		return l.tokens, nil
	}
	st, where, err := openStore(ctx, l.cfg, false, session.OpeningHooks{})
	if err != nil {
		return nil, err
	}
	b, ok := st.(oauthTokenBytes)
	if !ok {
		st.Close()
		return nil, fmt.Errorf("the session store %s cannot keep OAuth tokens", where)
	}
	l.st, l.tokens = st, &storeTokens{st: b, lease: st.Lease, where: where}
	return l.tokens, nil
}

func (l *lazyTokens) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	if l.st != nil {
		l.st.Close()
	}
}

// Load implements mcphost.TokenStore.
func (l *lazyTokens) Load(ctx context.Context, server string) (*mcphost.Token, error) {
	t, err := l.open(ctx)
	if err != nil {
		return nil, err
	}
	return t.Load(ctx, server)
}

// Save implements mcphost.TokenStore.
func (l *lazyTokens) Save(ctx context.Context, tok *mcphost.Token) error {
	t, err := l.open(ctx)
	if err != nil {
		return err
	}
	return t.Save(ctx, tok)
}

// Forget implements mcphost.TokenStore.
func (l *lazyTokens) Forget(ctx context.Context, tok *mcphost.Token) error {
	t, err := l.open(ctx)
	if err != nil {
		return err
	}
	return t.Forget(ctx, tok)
}

// LockRefresh implements mcphost.RefreshLocker.
func (l *lazyTokens) LockRefresh(ctx context.Context, server, issuer string) (func(), error) {
	t, err := l.open(ctx)
	if err != nil {
		return nil, err
	}
	return t.LockRefresh(ctx, server, issuer)
}

// serverTokens is where the running server's MCP host keeps OAuth tokens:
// in its session store when that is Redis (so that replicas share them),
// else in the state directory's file.
func serverTokens(cfg *config.Config, store session.Store) (mcphost.TokenStore, error) {
	if !sharesTokens(cfg.Store.URL) {
		return tokenFile(cfg)
	}
	b, ok := store.(oauthTokenBytes)
	if !ok {
		return nil, fmt.Errorf("the session store %s cannot keep OAuth tokens", redactStore(cfg.Store.URL))
	}
	return &storeTokens{st: b, lease: store.Lease, where: redactStore(cfg.Store.URL)}, nil
}

func tokenFile(cfg *config.Config) (mcphost.TokenStore, error) {
	dir, err := stateDir(cfg)
	if err != nil {
		return nil, err
	}
	return &mcphost.TokenFile{Path: filepath.Join(dir, TokenFileName)}, nil
}

// storeTokens is an mcphost.TokenStore in a session store: a token is its
// JSON, kept by server URL and issuer. Its errors name the store (its
// password hidden), never a token.
type storeTokens struct {
	st oauthTokenBytes
	// lease is the session store's: it holds off the refreshes of the
	// processes sharing the store (nil: none).
	lease func(ctx context.Context, id string) (func(), error)
	where string
}

var (
	_ mcphost.TokenStore    = (*storeTokens)(nil)
	_ mcphost.RefreshLocker = (*storeTokens)(nil)
	_ mcphost.RefreshLocker = (*lazyTokens)(nil)
)

// LockRefresh implements mcphost.RefreshLocker: the session store's lease
// of an id of the server and issuer's own, which holds off the refreshes
// of the replicas and `mcp auth` that share the store while this one
// refreshes (an authorization server that rotates refresh tokens revokes
// the grant when a spent one comes back).
func (s *storeTokens) LockRefresh(ctx context.Context, server, issuer string) (func(), error) {
	if s.lease == nil {
		return func() {}, nil
	}
	release, err := s.lease(ctx, refreshLeaseID(server, issuer))
	if err != nil {
		return nil, s.fail("waiting for another refresh of", err)
	}
	return release, nil
}

// refreshLeaseID is the lease id of the refreshes of a server's token of
// an issuer: a UUID (the form the store's leases take) made from their
// hash, of a version (5) no session id has.
func refreshLeaseID(server, issuer string) string {
	sum := sha256.Sum256([]byte("gemini-mcp-server oauth refresh\x00" + server + "\x00" + issuer))
	sum[6] = sum[6]&0x0f | 0x50
	sum[8] = sum[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
}

// Load implements mcphost.TokenStore: the newest token of any issuer.
func (s *storeTokens) Load(ctx context.Context, server string) (*mcphost.Token, error) {
	kept, err := s.st.LoadOAuthTokens(ctx, server)
	if err != nil {
		return nil, s.fail("reading", err)
	}
	issuers := make([]string, 0, len(kept))
	for iss := range kept {
		issuers = append(issuers, iss)
	}
	sort.Strings(issuers) // among equal times, the same one every time
	var best *mcphost.Token
	for _, iss := range issuers {
		t := new(mcphost.Token)
		// The decoder's error may quote the value: it is not passed on.
		if json.Unmarshal(kept[iss], t) != nil || t.Server != server || t.Issuer != iss {
			return nil, fmt.Errorf("OAuth tokens in the session store %s: the token of issuer %s for %s is not one this server wrote: sign in again (gemini-mcp-server mcp auth), which replaces it", s.where, iss, server)
		}
		if best == nil || t.Updated.After(best.Updated) {
			best = t
		}
	}
	return best, nil
}

// Save implements mcphost.TokenStore.
func (s *storeTokens) Save(ctx context.Context, t *mcphost.Token) error {
	if t.Server == "" || t.Issuer == "" {
		return errors.New("a token needs its server and issuer")
	}
	data, err := json.Marshal(t)
	if err != nil {
		return s.fail("writing", err)
	}
	if err := s.st.SaveOAuthToken(ctx, t.Server, t.Issuer, data); err != nil {
		return s.fail("writing", err)
	}
	return nil
}

// Forget implements mcphost.TokenStore: the kept value goes when it
// decodes to t; one that does not (another process's since, or one this
// server did not write) stays.
func (s *storeTokens) Forget(ctx context.Context, t *mcphost.Token) error {
	_, err := s.st.DeleteOAuthToken(ctx, t.Server, t.Issuer, func(value []byte) bool {
		kept := new(mcphost.Token)
		return json.Unmarshal(value, kept) == nil && t.Same(kept)
	})
	if err != nil {
		return s.fail("deleting", err)
	}
	return nil
}

func (s *storeTokens) fail(doing string, err error) error {
	return fmt.Errorf("%s OAuth tokens in the session store %s: %w", doing, s.where, err)
}

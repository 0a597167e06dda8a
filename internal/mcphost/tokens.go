package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// Token is what the host keeps of a sign-in to one MCP server: the
// tokens, and what refreshing them needs. It holds secrets: it is never
// logged, shown or put in an error.
type Token struct {
	// Server is the MCP server's URL (the OAuth resource), Issuer the
	// authorization server that issued the token: together they key it.
	Server string `json:"server"`
	Issuer string `json:"issuer"`

	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	// AuthMethod is the client's token_endpoint_auth_method
	// (client_secret_basic, client_secret_post or none).
	AuthMethod string   `json:"token_endpoint_auth_method,omitempty"`
	TokenURL   string   `json:"token_url"`
	Scopes     []string `json:"scopes,omitempty"`
	// Wanted are scopes the server asked for (a 403 for insufficient
	// scope) that the token lacks: the next sign-in asks for them too.
	Wanted []string `json:"wanted_scopes,omitempty"`

	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`
	Updated      time.Time `json:"updated"`
}

// TokenStore keeps the host's OAuth tokens, keyed by issuer and server
// URL, for the running server and `mcp auth` alike (replicas share them
// when they share the store).
type TokenStore interface {
	// Load returns the newest token kept for the server URL, of any
	// issuer; nil when there is none.
	Load(ctx context.Context, server string) (*Token, error)
	// Save keeps t, replacing the token of the same issuer and server.
	Save(ctx context.Context, t *Token) error
	// Forget forgets t, the token kept for its issuer and server, when
	// the store still keeps t (the same access and refresh tokens): a
	// token another process has kept since (its refresh, a sign-in)
	// stays. None kept is not an error.
	Forget(ctx context.Context, t *Token) error
}

// Same reports whether t and o are the same grant's same tokens: the same
// server, issuer, access token and refresh token.
func (t *Token) Same(o *Token) bool {
	return t.Server == o.Server && t.Issuer == o.Issuer && t.AccessToken == o.AccessToken && t.RefreshToken == o.RefreshToken
}

// Limits of the token file: it is read whole.
const (
	maxTokenFileBytes = 4 << 20
	maxTokens         = 1000
)

// TokenFile is a TokenStore in one JSON file, mode 0600 in a 0700
// directory, rewritten whole (a temporary file renamed over it) under an
// advisory lock, so that `mcp auth` and a running server can share it.
type TokenFile struct {
	Path string
	mu   sync.Mutex
}

type tokenFileData struct {
	Version int      `json:"version"`
	Tokens  []*Token `json:"tokens"`
}

// Load implements TokenStore.
func (f *TokenFile) Load(_ context.Context, server string) (*Token, error) {
	var best *Token
	err := f.with(false, func(d *tokenFileData) bool {
		for _, t := range d.Tokens {
			if t.Server == server && (best == nil || t.Updated.After(best.Updated)) {
				best = t
			}
		}
		return false
	})
	return best, err
}

// Save implements TokenStore.
func (f *TokenFile) Save(_ context.Context, t *Token) error {
	if t.Server == "" || t.Issuer == "" {
		return errors.New("a token needs its server and issuer")
	}
	return f.with(true, func(d *tokenFileData) bool {
		d.Tokens = slices.DeleteFunc(d.Tokens, func(o *Token) bool { return o.Server == t.Server && o.Issuer == t.Issuer })
		d.Tokens = append(d.Tokens, t)
		if len(d.Tokens) > maxTokens {
			slices.SortStableFunc(d.Tokens, func(a, b *Token) int { return b.Updated.Compare(a.Updated) })
			d.Tokens = d.Tokens[:maxTokens]
		}
		return true
	})
}

// Forget implements TokenStore.
func (f *TokenFile) Forget(_ context.Context, t *Token) error {
	return f.with(true, func(d *tokenFileData) bool {
		n := len(d.Tokens)
		d.Tokens = slices.DeleteFunc(d.Tokens, t.Same)
		return len(d.Tokens) != n
	})
}

// LockRefresh implements RefreshLocker: an advisory lock on a file beside
// the token file, the same for every server (refreshes are short and
// rare), so that processes sharing the file refresh one at a time.
func (f *TokenFile) LockRefresh(ctx context.Context, _, _ string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	unlock, err := waitLockFile(ctx, f.Path+".refresh.lock")
	if err != nil {
		return nil, fmt.Errorf("token file: %w", err)
	}
	return unlock, nil
}

// with reads the file under the lock (exclusive when write), calls fn,
// and writes the file back when fn says it changed it.
func (f *TokenFile) with(write bool, fn func(*tokenFileData) (changed bool)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	dir := filepath.Dir(f.Path)
	if write {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("token file: %w", err)
		}
	}
	unlock, err := lockFile(f.Path+".lock", write)
	if err != nil {
		if !write && errors.Is(err, os.ErrNotExist) {
			return nil // nothing was ever stored
		}
		return fmt.Errorf("token file: %w", err)
	}
	defer unlock()
	d := &tokenFileData{Version: 1}
	if err := readTokenFile(f.Path, d); err != nil {
		return err
	}
	if !fn(d) || !write {
		return nil
	}
	data, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".tokens-*")
	if err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("token file: %w", err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("token file: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("token file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	if err := os.Rename(tmp.Name(), f.Path); err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	return nil
}

func readTokenFile(path string, d *tokenFileData) error {
	fh, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("token file %s: not a regular file", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("token file %s: mode %v lets others read it; it must be 0600 (chmod 600 it, or delete it and sign in again)", path, fi.Mode().Perm())
	}
	data, err := io.ReadAll(io.LimitReader(fh, maxTokenFileBytes+1))
	if err != nil {
		return fmt.Errorf("token file: %w", err)
	}
	if len(data) > maxTokenFileBytes {
		return fmt.Errorf("token file %s: over %d bytes", path, maxTokenFileBytes)
	}
	if len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, d); err != nil {
		return fmt.Errorf("token file %s: not the host's token file (%w); delete it and sign in again", path, err)
	}
	d.Tokens = slices.DeleteFunc(d.Tokens, func(t *Token) bool { return t == nil })
	return nil
}

// MemoryTokens is a TokenStore in memory, for a host without a place to
// keep them.
type MemoryTokens struct {
	mu     sync.Mutex
	tokens []Token
}

// Load implements TokenStore.
func (m *MemoryTokens) Load(_ context.Context, server string) (*Token, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var best *Token
	for i := range m.tokens {
		if t := &m.tokens[i]; t.Server == server && (best == nil || t.Updated.After(best.Updated)) {
			best = t
		}
	}
	if best == nil {
		return nil, nil
	}
	c := *best
	return &c, nil
}

// Save implements TokenStore.
func (m *MemoryTokens) Save(_ context.Context, t *Token) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tokens = slices.DeleteFunc(m.tokens, func(o Token) bool { return o.Server == t.Server && o.Issuer == t.Issuer })
	m.tokens = append(m.tokens, *t)
	return nil
}

// Forget implements TokenStore.
func (m *MemoryTokens) Forget(_ context.Context, t *Token) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tokens = slices.DeleteFunc(m.tokens, func(o Token) bool { return t.Same(&o) })
	return nil
}

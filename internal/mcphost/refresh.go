package mcphost

import (
	"context"
	"fmt"
	"net/url"
	"reflect"
	"sync"
	"time"
)

// refusedRechecks are the pauses between looks at the store after the
// authorization server refused a refresh token, before the token is
// forgotten. Servers rotate refresh tokens: another process sharing the
// store (a replica, `mcp auth`) that refreshed first has its new token
// from the server a moment before it keeps it, and in that moment this
// process's refresh is refused. 3 s in all, paid only when no other
// process keeps a token, that is when a new sign-in is needed anyway.
var refusedRechecks = []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond, 1600 * time.Millisecond}

// refreshLocked trades the refresh token for a new access token and keeps
// it. A refused refresh token is forgotten: the server then needs a new
// sign-in.
//
// A refresh token is spent once. Authorization servers rotate refresh
// tokens, and one that sees a spent refresh token again takes it for a
// stolen one and revokes the whole grant, the newest tokens too (RFC 9700
// §4.14.2; oidc-provider does). So one refresh of a server's token is in
// flight at a time: in this process (all its servers of that URL and
// issuer), and across the processes sharing the store when it can lock
// (the token file can). The others wait, then take up the token it got.
func (a *serverAuth) refreshLocked(ctx context.Context) error {
	t := a.tok
	f, release, err := a.holdRefresh(ctx, t)
	if err != nil {
		return fmt.Errorf("waiting for another refresh of the OAuth token: %w", err)
	}
	defer release()
	// Once it holds the refresh, it sees it through even when the request
	// that needed it ends: the authorization server may spend the refresh
	// token and answer with the only one left (the OAuth client's timeout
	// bounds the request).
	ctx = context.WithoutCancel(ctx)
	// The refresh this one waited for may have spent t's refresh token:
	// its token is the one to use.
	if f.got != nil && f.spent == t.RefreshToken && f.got.AccessToken != t.AccessToken {
		got := *f.got
		a.setLocked(&got)
		if got.Expiry.IsZero() || a.now().Before(got.Expiry) {
			return nil
		}
		t = &got
	}
	// Another process sharing the store (a replica, `mcp auth`) may have
	// refreshed or replaced the token since this one read it: its
	// refresh token may be the only valid one now (authorization servers
	// rotate them).
	if kept := a.keptOther(ctx, t); kept != nil {
		a.setLocked(kept)
		if kept.Expiry.IsZero() || a.now().Add(expiryMargin).Before(kept.Expiry) || kept.RefreshToken == "" {
			return nil
		}
		t = kept
	}
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {t.RefreshToken}, "resource": {t.Server}}
	user, pass := "", ""
	if t.AuthMethod == "client_secret_basic" {
		user, pass = t.ClientID, t.ClientSecret
	} else {
		form.Set("client_id", t.ClientID)
		if t.ClientSecret != "" && t.AuthMethod != "none" {
			form.Set("client_secret", t.ClientSecret)
		}
	}
	var ans tokenAnswer
	err = postForm(ctx, a.http, t.TokenURL, form, user, pass, &ans)
	if err == nil {
		err = ans.check()
	}
	if err != nil {
		if grantRevoked(err) {
			// Another process's refresh may have refused this one: the
			// token it keeps is the one to use.
			if kept := a.awaitOther(ctx, t); kept != nil {
				a.setLocked(kept)
				return nil
			}
			// Forget the refused token, unless another process has kept
			// one since (the store leaves that).
			if derr := a.store.Forget(ctx, t); derr != nil {
				a.log.Warn("MCP server: forgetting the refused token failed", "error", derr)
			}
			if kept := a.keptOther(ctx, t); kept != nil && kept.RefreshToken != t.RefreshToken {
				a.setLocked(kept)
				return nil
			}
			a.log.Warn("MCP server: the refresh token was refused; a new sign-in is needed", "error", a.red.String(err.Error()))
			a.tok = nil
			a.needs = &NeedsSignInError{Server: a.cfg.Name, Why: "the authorization server refused the refresh token"}
			return a.needs
		}
		return fmt.Errorf("refreshing the OAuth token: %s", a.red.String(err.Error()))
	}
	n := *t
	ans.apply(&n, a.now())
	a.setLocked(&n)
	got := n
	f.spent, f.got = t.RefreshToken, &got
	if err := a.store.Save(ctx, &n); err != nil {
		a.log.Warn("MCP server: keeping the refreshed OAuth token failed", "error", err)
	}
	a.log.Info("MCP server: OAuth token refreshed")
	return nil
}

// awaitOther looks at the store for a token of another refresh token
// than t's, again after each of refusedRechecks, and returns it; nil when
// none comes, or ctx ends.
func (a *serverAuth) awaitOther(ctx context.Context, t *Token) *Token {
	for _, pause := range refusedRechecks {
		if kept := a.keptOther(ctx, t); kept != nil && kept.RefreshToken != t.RefreshToken {
			return kept
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(pause):
		}
	}
	return nil
}

// keptOther is the token the store keeps for the server when it is not t
// (nil when it is, or the store cannot be read).
func (a *serverAuth) keptOther(ctx context.Context, t *Token) *Token {
	kept, err := a.store.Load(ctx, t.Server)
	if err != nil || kept == nil || (kept.AccessToken == t.AccessToken && kept.RefreshToken == t.RefreshToken) {
		return nil
	}
	return kept
}

// RefreshLocker is a TokenStore that processes share and that can hold
// off the others' refreshes while one process refreshes a token.
type RefreshLocker interface {
	// LockRefresh waits, within ctx, until no other process refreshes the
	// server's token of the issuer, and holds them off until unlock.
	LockRefresh(ctx context.Context, server, issuer string) (unlock func(), err error)
}

// refreshFlight is the one refresh of a store's token for a server and
// issuer that a process has in flight; its fields belong to the holder
// of sem.
type refreshFlight struct {
	sem chan struct{}
	// The last refresh's: the refresh token it spent, the token it got.
	spent string
	got   *Token
}

type flightKey struct {
	store          TokenStore
	server, issuer string
}

var (
	flightsMu sync.Mutex
	flights   = map[flightKey]*refreshFlight{}
)

// holdRefresh waits, within ctx, until this process and (when the store
// can lock) the others sharing the store refresh no token of t's server
// and issuer, and holds them off until release.
func (a *serverAuth) holdRefresh(ctx context.Context, t *Token) (f *refreshFlight, release func(), err error) {
	key := flightKey{server: t.Server, issuer: t.Issuer}
	if a.store != nil && reflect.TypeOf(a.store).Comparable() {
		key.store = a.store
	}
	flightsMu.Lock()
	f = flights[key]
	if f == nil {
		f = &refreshFlight{sem: make(chan struct{}, 1)}
		flights[key] = f
	}
	flightsMu.Unlock()
	select {
	case f.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	unlock := func() {}
	if l, ok := a.store.(RefreshLocker); ok {
		if unlock, err = l.LockRefresh(ctx, t.Server, t.Issuer); err != nil {
			<-f.sem
			return nil, nil, err
		}
	}
	return f, func() { unlock(); <-f.sem }, nil
}

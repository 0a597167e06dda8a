package redisstore

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

const downURL = "https://mcp.example.com/mcp"

// TestOAuthTokens: tokens kept by server and issuer, replaced by a save of
// the same pair, seen by a second store on the same Redis (a replica),
// deleted one issuer at a time, the server's hash expiring
// OAuthTokenTTL after the last save.
func TestOAuthTokens(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, session.Options{})
	ctx := t.Context()
	if got, err := s.LoadOAuthTokens(ctx, downURL); err != nil || len(got) != 0 {
		t.Fatalf("nothing saved: %v %v", got, err)
	}
	for _, kv := range [][3]string{
		{"https://idp-a.example.com", `{"n":1}`},
		{"https://idp-b.example.com", `{"n":2}`},
		{"https://idp-a.example.com", `{"n":3}`},
	} {
		if err := s.SaveOAuthToken(ctx, downURL, kv[0], []byte(kv[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SaveOAuthToken(ctx, "https://other.example.com/mcp", "https://idp-a.example.com", []byte(`{"n":4}`)); err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{"https://idp-a.example.com": []byte(`{"n":3}`), "https://idp-b.example.com": []byte(`{"n":2}`)}
	replica := open(t, srv, session.Options{})
	got, err := replica.LoadOAuthTokens(ctx, downURL)
	if err != nil || !maps.EqualFunc(got, want, func(a, b []byte) bool { return string(a) == string(b) }) {
		t.Fatalf("the replica loads %q, %v; want %q", got, err, want)
	}

	ttl, err := plain(t, srv).PTTL(ctx, s.prefix+"oauth:"+downURL).Result()
	if err != nil || ttl < OAuthTokenTTL-time.Hour || ttl > OAuthTokenTTL {
		t.Fatalf("PTTL %v %v, want about %v", ttl, err, OAuthTokenTTL)
	}
	// A save restarts the expiry.
	plain(t, srv).PExpire(ctx, s.prefix+"oauth:"+downURL, time.Hour)
	if err := s.SaveOAuthToken(ctx, downURL, "https://idp-b.example.com", []byte(`{"n":5}`)); err != nil {
		t.Fatal(err)
	}
	if ttl := plain(t, srv).PTTL(ctx, s.prefix+"oauth:"+downURL).Val(); ttl < OAuthTokenTTL-time.Hour {
		t.Errorf("after a save PTTL %v, want about %v", ttl, OAuthTokenTTL)
	}

	if _, err := replica.DeleteOAuthToken(ctx, downURL, "https://idp-a.example.com", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := replica.DeleteOAuthToken(ctx, downURL, "https://never.example.com", nil); err != nil {
		t.Fatalf("deleting what is not there: %v", err)
	}
	if got, err := s.LoadOAuthTokens(ctx, downURL); err != nil || len(got) != 1 || string(got["https://idp-b.example.com"]) != `{"n":5}` {
		t.Fatalf("after the delete: %q %v", got, err)
	}
	if got, _ := s.LoadOAuthTokens(ctx, "https://other.example.com/mcp"); len(got) != 1 {
		t.Errorf("the other server's token went with the delete: %q", got)
	}
	if _, err := s.DeleteOAuthToken(ctx, downURL, "https://idp-b.example.com", nil); err != nil {
		t.Fatal(err)
	}
	if n := plain(t, srv).Exists(ctx, s.prefix+"oauth:"+downURL).Val(); n != 0 {
		t.Errorf("the server's hash is left after its last token went")
	}
}

// TestOAuthTokenLimits: a value over the cap is refused on save and, put
// there by someone else, refused on load without being read; so are too
// many issuers; bad names are refused before Redis is asked; nothing
// refused changes what is kept.
func TestOAuthTokenLimits(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, session.Options{})
	ctx := t.Context()
	key := s.prefix + "oauth:" + downURL
	huge := []byte(strings.Repeat("x", MaxOAuthTokenBytes+1))
	if err := s.SaveOAuthToken(ctx, downURL, "https://idp.example.com", huge); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Errorf("saving a huge token: %v", err)
	}
	if n := plain(t, srv).Exists(ctx, key).Val(); n != 0 {
		t.Errorf("a refused save wrote the hash")
	}
	for _, bad := range [][2]string{{"", "https://idp.example.com"}, {downURL, ""}, {strings.Repeat("u", maxOAuthName+1), "i"}, {downURL, strings.Repeat("i", maxOAuthName+1)}} {
		if err := s.SaveOAuthToken(ctx, bad[0], bad[1], []byte("{}")); err == nil {
			t.Errorf("SaveOAuthToken(%.20q, %.20q): no error", bad[0], bad[1])
		}
	}
	if _, err := s.LoadOAuthTokens(ctx, ""); err == nil {
		t.Error("LoadOAuthTokens of no server: no error")
	}

	// A huge value written behind the store's back: an error naming its
	// size, not the value.
	plain(t, srv).HSet(ctx, key, "https://idp.example.com", huge)
	got, err := s.LoadOAuthTokens(ctx, downURL)
	if err == nil || got != nil || !strings.Contains(err.Error(), fmt.Sprint(len(huge))+" bytes") || strings.Contains(err.Error(), "xxxx") {
		t.Errorf("loading a huge value: %v, %d tokens", err, len(got))
	}
	// A delete judged on the value does not read such a value either, and
	// leaves it.
	deleted, err := s.DeleteOAuthToken(ctx, downURL, "https://idp.example.com", func([]byte) bool {
		t.Error("a value over the cap was read for judging")
		return true
	})
	if err == nil || deleted || !strings.Contains(err.Error(), fmt.Sprint(len(huge))+" bytes") || strings.Contains(err.Error(), "xxxx") {
		t.Errorf("deleting beside a huge value: %v, deleted %v", err, deleted)
	}
	if n := plain(t, srv).HLen(ctx, key).Val(); n != 1 {
		t.Errorf("the huge value went with a refused delete (%d fields left)", n)
	}
	plain(t, srv).Del(ctx, key)
	plain(t, srv).HSet(ctx, key, strings.Repeat("i", maxOAuthName+1), "{}")
	if _, err := s.LoadOAuthTokens(ctx, downURL); err == nil {
		t.Error("loading an over-long issuer: no error")
	}
	plain(t, srv).Del(ctx, key)

	for i := range MaxOAuthIssuers {
		if err := s.SaveOAuthToken(ctx, downURL, fmt.Sprintf("https://idp-%d.example.com", i), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SaveOAuthToken(ctx, downURL, "https://one-more.example.com", []byte("{}")); !errors.Is(err, ErrOAuthTooMany) {
		t.Errorf("one issuer too many: %v", err)
	}
	// Replacing one of those kept is still allowed.
	if err := s.SaveOAuthToken(ctx, downURL, "https://idp-0.example.com", []byte(`{"again":1}`)); err != nil {
		t.Errorf("replacing a kept token: %v", err)
	}
	if got, err := s.LoadOAuthTokens(ctx, downURL); err != nil || len(got) != MaxOAuthIssuers || string(got["https://idp-0.example.com"]) != `{"again":1}` {
		t.Errorf("after the refused save: %d tokens, %v", len(got), err)
	}
	plain(t, srv).HSet(ctx, key, "https://one-more.example.com", "{}")
	if _, err := s.LoadOAuthTokens(ctx, downURL); err == nil || !strings.Contains(err.Error(), "over the") {
		t.Errorf("loading too many issuers: %v", err)
	}
}

// TestOAuthTokensPrefix: stores under other prefixes on one Redis keep
// their tokens apart, under their prefixes.
func TestOAuthTokensPrefix(t *testing.T) {
	srv := redistest.Start(t)
	a := open(t, srv, session.Options{Prefix: "team-a:"})
	b := open(t, srv, session.Options{Prefix: "team-b:"})
	ctx := t.Context()
	if err := a.SaveOAuthToken(ctx, downURL, "https://idp.example.com", []byte(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if got, err := b.LoadOAuthTokens(ctx, downURL); err != nil || len(got) != 0 {
		t.Errorf("a store under another prefix loads %q, %v", got, err)
	}
	if _, err := b.DeleteOAuthToken(ctx, downURL, "https://idp.example.com", nil); err != nil {
		t.Fatal(err)
	}
	if got, _ := a.LoadOAuthTokens(ctx, downURL); len(got) != 1 {
		t.Errorf("a delete under another prefix removed the token")
	}
	if keys := plain(t, srv).Keys(ctx, "*").Val(); len(keys) != 1 || keys[0] != "team-a:oauth:"+downURL {
		t.Errorf("keys %q, want team-a:oauth:%s only", keys, downURL)
	}
}

// TestOAuthTokensRedisDown: a Redis that is gone fails the calls with
// session.ErrUnavailable, in seconds.
func TestOAuthTokensRedisDown(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, session.Options{})
	srv.Kill()
	ctx := t.Context()
	if _, err := s.LoadOAuthTokens(ctx, downURL); !errors.Is(err, session.ErrUnavailable) {
		t.Errorf("Load: %v", err)
	}
	if err := s.SaveOAuthToken(ctx, downURL, "https://idp.example.com", []byte("{}")); !errors.Is(err, session.ErrUnavailable) {
		t.Errorf("Save: %v", err)
	}
	if _, err := s.DeleteOAuthToken(ctx, downURL, "https://idp.example.com", nil); !errors.Is(err, session.ErrUnavailable) {
		t.Errorf("Delete: %v", err)
	}
}

// TestOAuthTokenDeleteIf: a delete judged on the kept value removes only
// the value it was shown. A process whose refresh token was refused
// forgets its token so; a token another process keeps meanwhile (its own
// refresh, a sign-in) stays, and a change made while the judgement runs
// makes it judge the new value.
func TestOAuthTokenDeleteIf(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, session.Options{})
	other := open(t, srv, session.Options{})
	ctx := t.Context()
	const iss = "https://idp.example.com"
	if err := s.SaveOAuthToken(ctx, downURL, iss, []byte(`{"refresh_token":"r1"}`)); err != nil {
		t.Fatal(err)
	}
	isR1 := func(v []byte) bool { return string(v) == `{"refresh_token":"r1"}` }
	// Another process saves r2 while this one judges r1: the judgement
	// runs again, on r2, which it keeps.
	var judged []string
	deleted, err := s.DeleteOAuthToken(ctx, downURL, iss, func(v []byte) bool {
		judged = append(judged, string(v))
		if len(judged) == 1 {
			if err := other.SaveOAuthToken(ctx, downURL, iss, []byte(`{"refresh_token":"r2"}`)); err != nil {
				t.Fatal(err)
			}
		}
		return isR1(v)
	})
	if err != nil || deleted {
		t.Fatalf("deleted %v, %v: the token saved meanwhile must stay", deleted, err)
	}
	if len(judged) != 2 || judged[1] != `{"refresh_token":"r2"}` {
		t.Fatalf("judged %q, want r1 then r2", judged)
	}
	if got, _ := s.LoadOAuthTokens(ctx, downURL); string(got[iss]) != `{"refresh_token":"r2"}` {
		t.Fatalf("kept %q, want r2", got)
	}
	// The value it judges stale goes.
	if deleted, err := s.DeleteOAuthToken(ctx, downURL, iss, func(v []byte) bool { return !isR1(v) }); err != nil || !deleted {
		t.Fatalf("deleted %v, %v", deleted, err)
	}
	if got, _ := s.LoadOAuthTokens(ctx, downURL); len(got) != 0 {
		t.Fatalf("kept %q after the delete", got)
	}
	// Nothing kept: nothing judged, no error.
	if deleted, err := s.DeleteOAuthToken(ctx, downURL, iss, func([]byte) bool { t.Error("judged a token that is not there"); return true }); err != nil || deleted {
		t.Fatalf("deleted %v, %v", deleted, err)
	}
}

package redisstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Limits of the MCP host's OAuth tokens kept here (see LoadOAuthTokens).
const (
	// OAuthTokenTTL is how long a server's tokens are kept after the
	// last save (a sign-in or a refresh): a server no longer used does
	// not keep them for ever.
	OAuthTokenTTL = 90 * 24 * time.Hour
	// MaxOAuthTokenBytes caps one kept token, written or read.
	MaxOAuthTokenBytes = 64 << 10
	// MaxOAuthIssuers caps the issuers of one server's tokens.
	MaxOAuthIssuers = 16
	// maxOAuthName caps a server URL and an issuer.
	maxOAuthName = 2048
)

// ErrOAuthTooMany is SaveOAuthToken's error when the server already has
// MaxOAuthIssuers tokens of other issuers.
var ErrOAuthTooMany = errors.New("too many issuers")

// loadOAuthScript returns {"ok", issuer, value, …} of the hash KEYS[1],
// or, without reading a value, {"many", count} when it has over ARGV[1]
// fields, {"name"} when an issuer is longer than ARGV[2] bytes, {"big",
// issuer, length} when a value is longer than ARGV[3].
var loadOAuthScript = redis.NewScript(`
local n = redis.call('HLEN', KEYS[1])
if n > tonumber(ARGV[1]) then return {'many', tostring(n)} end
local fields = redis.call('HKEYS', KEYS[1])
for _, f in ipairs(fields) do
  if #f > tonumber(ARGV[2]) then return {'name'} end
  local l = redis.call('HSTRLEN', KEYS[1], f)
  if l > tonumber(ARGV[3]) then return {'big', f, tostring(l)} end
end
local out = {'ok'}
for _, v in ipairs(redis.call('HGETALL', KEYS[1])) do out[#out+1] = v end
return out`)

// saveOAuthScript sets the field ARGV[1] of the hash KEYS[1] to ARGV[2]
// and the hash's expiry to ARGV[4] ms, unless that would make it hold
// over ARGV[3] fields: 1, else 0 and nothing changed.
var saveOAuthScript = redis.NewScript(`
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[3]) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1`)

// oauthKey is the one key of a server's tokens: no hash tag needed.
func (s *Store) oauthKey(server string) string { return s.prefix + "oauth:" + server }

func checkOAuthNames(server, issuer string) error {
	if server == "" || len(server) > maxOAuthName || len(issuer) > maxOAuthName {
		return fmt.Errorf("session store: an OAuth token's server URL must be 1 to %d bytes and its issuer at most %d", maxOAuthName, maxOAuthName)
	}
	return nil
}

// LoadOAuthTokens returns the MCP host's OAuth tokens kept for the server
// URL, by issuer, as SaveOAuthToken was given them; none is an empty map.
// A value over MaxOAuthTokenBytes, or over MaxOAuthIssuers of them, is an
// error, and is not read. Its other errors wrap session.ErrUnavailable.
func (s *Store) LoadOAuthTokens(ctx context.Context, server string) (map[string][]byte, error) {
	if err := checkOAuthNames(server, ""); err != nil {
		return nil, err
	}
	res, err := loadOAuthScript.Run(ctx, s.rdb, []string{s.oauthKey(server)}, MaxOAuthIssuers, maxOAuthName, MaxOAuthTokenBytes).StringSlice()
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	switch {
	case len(res) == 2 && res[0] == "many":
		return nil, fmt.Errorf("session store: %s holds %s OAuth tokens of one server, over the %d allowed: delete it", s.oauthKey(server), res[1], MaxOAuthIssuers)
	case len(res) == 1 && res[0] == "name":
		return nil, fmt.Errorf("session store: %s names an issuer over %d bytes: delete it", s.oauthKey(server), maxOAuthName)
	case len(res) == 3 && res[0] == "big":
		return nil, fmt.Errorf("session store: %s holds an OAuth token of issuer %s of %s bytes, over the %d allowed: delete it", s.oauthKey(server), res[1], res[2], MaxOAuthTokenBytes)
	case len(res) < 1 || res[0] != "ok" || len(res)%2 != 1:
		return nil, fmt.Errorf("session store: unexpected answer of Redis to reading %s", s.oauthKey(server))
	}
	out := make(map[string][]byte, len(res)/2)
	for i := 1; i+1 < len(res); i += 2 {
		out[res[i]] = []byte(res[i+1])
	}
	return out, nil
}

// SaveOAuthToken keeps value as the OAuth token of issuer for the server
// URL, replacing the one kept before, and keeps the server's tokens
// OAuthTokenTTL from now. A server with MaxOAuthIssuers tokens of other
// issuers refuses it with ErrOAuthTooMany.
func (s *Store) SaveOAuthToken(ctx context.Context, server, issuer string, value []byte) error {
	if err := checkOAuthNames(server, issuer); err != nil {
		return err
	}
	if issuer == "" {
		return errors.New("session store: an OAuth token needs its issuer")
	}
	if len(value) > MaxOAuthTokenBytes {
		return fmt.Errorf("session store: an OAuth token of %d bytes is over the %d allowed", len(value), MaxOAuthTokenBytes)
	}
	ok, err := saveOAuthScript.Run(ctx, s.rdb, []string{s.oauthKey(server)}, issuer, value, MaxOAuthIssuers, strconv.FormatInt(OAuthTokenTTL.Milliseconds(), 10)).Int()
	if err != nil {
		return s.fail(ctx, err)
	}
	if ok != 1 {
		return fmt.Errorf("session store: %s: %w (%d): delete the tokens no longer used", s.oauthKey(server), ErrOAuthTooMany, MaxOAuthIssuers)
	}
	return nil
}

// DeleteOAuthToken forgets the OAuth token of issuer for the server URL
// when stale, given the kept value, says it is the one to forget (nil:
// whatever is kept). The look and the delete are one step against other
// writers: a token another process saves between them is judged anew,
// so a process never deletes a token it has not seen. None kept is not
// an error; deleted says whether one was.
func (s *Store) DeleteOAuthToken(ctx context.Context, server, issuer string, stale func(value []byte) bool) (deleted bool, err error) {
	if err := checkOAuthNames(server, issuer); err != nil {
		return false, err
	}
	key := s.oauthKey(server)
	if stale == nil {
		n, err := s.rdb.HDel(ctx, key, issuer).Result()
		if err != nil {
			return false, s.fail(ctx, err)
		}
		return n > 0, nil
	}
	const tries = 8 // each lost only to another writer's change
	var tooBig error
	for range tries {
		deleted = false
		err = s.rdb.Watch(ctx, func(tx *redis.Tx) error {
			n, err := tx.HStrLen(ctx, key, issuer).Result()
			if err != nil || n == 0 {
				return err
			}
			if n > MaxOAuthTokenBytes {
				tooBig = fmt.Errorf("session store: %s holds an OAuth token of issuer %s of %d bytes, over the %d allowed: delete it", key, issuer, n, MaxOAuthTokenBytes)
				return tooBig
			}
			v, err := tx.HGet(ctx, key, issuer).Bytes()
			if errors.Is(err, redis.Nil) {
				return nil
			}
			if err != nil || !stale(v) {
				return err
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.HDel(ctx, key, issuer)
				return nil
			})
			deleted = err == nil
			return err
		}, key)
		if !errors.Is(err, redis.TxFailedErr) {
			break
		}
	}
	switch {
	case errors.Is(err, redis.TxFailedErr):
		return false, fmt.Errorf("session store: %s changed %d times while a token was being deleted: try again", key, tries)
	case tooBig != nil:
		return false, tooBig
	case err != nil:
		return false, s.fail(ctx, err)
	}
	return deleted, nil
}

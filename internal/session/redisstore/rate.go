package redisstore

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// takeScript takes one call from a token bucket of n calls, regaining one
// every per/n, kept in a hash (tokens, at in microseconds) that expires
// once the bucket would be full again. Time is Redis's own clock, the same
// for every replica. It returns {1, 0} when the call is taken, else {0,
// microseconds until one is regained}.
var takeScript = redis.NewScript(`
local n = tonumber(ARGV[1])
local per = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = per / n
local v = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens, at = tonumber(v[1]), tonumber(v[2])
if not tokens then
  tokens, at = n, now
end
tokens = math.min(n, tokens + (now - at) / interval)
local ok, wait = 0, 0
if tokens >= 1 then
  tokens = tokens - 1
  ok = 1
else
  wait = math.ceil((1 - tokens) * interval)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(per / 1000))
return {ok, wait}`)

// TakeCall takes one call of the rate limit named key (a client and a
// tool) that allows n calls per period, shared by every server using this
// Redis: ok, or how long until a call is regained. Its errors wrap
// session.ErrUnavailable.
func (s *Store) TakeCall(ctx context.Context, key string, n int, per time.Duration) (ok bool, retryAfter time.Duration, err error) {
	res, err := takeScript.Run(ctx, s.rdb, []string{s.prefix + "rate:" + key}, n, per.Microseconds()).Int64Slice()
	if err != nil {
		return false, 0, s.fail(ctx, err)
	}
	return res[0] == 1, time.Duration(res[1]) * time.Microsecond, nil
}

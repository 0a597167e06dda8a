package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// putAnswerScript keeps an answer (KEYS[1], value ARGV[1], TTL ARGV[2]
// ms) and evicts the oldest answers until all kept ones fit the budget
// (ARGV[3] bytes). KEYS[2..5] are pages (ids by arrival), pagesizes (id →
// "bytes:session"), pagebytes and pageseq; KEYS[6..8] the session's
// record, turns and set of answers. ARGV[4] is the answer's id, ARGV[5]
// its bytes, ARGV[6] its session ("" for none), ARGV[7] the answer key
// prefix and ARGV[8] that of answer sets. An answer of a session joins
// the session's set and restarts the session's TTL, so that it expires
// with the rest of the session.
var putAnswerScript = redis.NewScript(refreshLua + `
local id, size, sid = ARGV[4], tonumber(ARGV[5]), ARGV[6]
local old = redis.call('HGET', KEYS[3], id)
if old then redis.call('DECRBY', KEYS[4], tonumber(string.match(old, '^(%d+)'))) end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[5]), id)
redis.call('HSET', KEYS[3], id, size .. ':' .. sid)
local total = redis.call('INCRBY', KEYS[4], size)
local budget = tonumber(ARGV[3])
while total > budget do
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  if not oldest or oldest == id then break end
  redis.call('ZREM', KEYS[2], oldest)
  redis.call('DEL', ARGV[7] .. oldest)
  local v = redis.call('HGET', KEYS[3], oldest)
  redis.call('HDEL', KEYS[3], oldest)
  if v then
    local b, s = string.match(v, '^(%d+):(.*)$')
    total = redis.call('DECRBY', KEYS[4], tonumber(b))
    if s ~= '' then redis.call('SREM', ARGV[8] .. s, oldest) end
  end
end
if sid ~= '' then
  redis.call('SADD', KEYS[8], id)
  refresh(KEYS[6], KEYS[7], KEYS[8], ARGV[2], ARGV[7])
end
return 1`)

// PutAnswer keeps the pages of an answer for chat-page, evicting the
// oldest answers (of every session and process sharing the Redis) beyond
// the budget for pages. An answer larger than the whole budget keeps its
// first pages that fit (at least one); Dropped counts the rest.
func (s *Store) PutAnswer(ctx context.Context, a session.PagedAnswer) error {
	if err := checkID(a.ID); err != nil {
		return fmt.Errorf("session store: answer id: %w", err)
	}
	if a.SessionID != "" {
		if err := checkID(a.SessionID); err != nil {
			return err
		}
	}
	a, size := a.Fit(s.opts.MaxPagedBytes)
	data, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	keys := append([]string{s.answerKey(a.ID), s.prefix + "pages", s.prefix + "pagesizes", s.prefix + "pagebytes", s.prefix + "pageseq"},
		s.sessionKeys(a.SessionID)...)
	if err := putAnswerScript.Run(ctx, s.rdb, keys, data, s.ttlMillis(), s.opts.MaxPagedBytes,
		a.ID, size, a.SessionID, s.key("answer", ""), s.key("answers", "")).Err(); err != nil {
		return s.fail(ctx, err)
	}
	return nil
}

// GetAnswer returns the answer with id id.
func (s *Store) GetAnswer(ctx context.Context, id string) (session.PagedAnswer, bool, error) {
	if err := checkID(id); err != nil {
		return session.PagedAnswer{}, false, fmt.Errorf("session store: answer id: %w", err)
	}
	data, err := s.rdb.Get(ctx, s.answerKey(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return session.PagedAnswer{}, false, nil
	}
	if err != nil {
		return session.PagedAnswer{}, false, s.fail(ctx, err)
	}
	var a session.PagedAnswer
	if err := json.Unmarshal(data, &a); err != nil {
		return session.PagedAnswer{}, false, fmt.Errorf("session store: answer %s in Redis at %s is corrupt: %v", id, s.addr, err)
	}
	return a, true, nil
}

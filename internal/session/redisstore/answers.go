package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// pageScript counts an answer into the page budget and picks the oldest
// answers to evict until all kept ones fit it (ARGV[3] bytes). KEYS are
// pages (ids by arrival), pagesizes (id → "bytes:session"), pagebytes and
// pageseq, one slot's; ARGV[1] is the answer's id, ARGV[2] its bytes and
// ARGV[4] its session ("" for none). It returns {id, session, …} of the
// answers evicted, which PutAnswer then deletes.
var pageScript = redis.NewScript(`
local id, size, sid = ARGV[1], tonumber(ARGV[2]), ARGV[4]
local old = redis.call('HGET', KEYS[2], id)
if old then redis.call('DECRBY', KEYS[3], tonumber(string.match(old, '^(%d+)'))) end
redis.call('ZADD', KEYS[1], redis.call('INCR', KEYS[4]), id)
redis.call('HSET', KEYS[2], id, size .. ':' .. sid)
local total = redis.call('INCRBY', KEYS[3], size)
local budget = tonumber(ARGV[3])
local out = {}
while total > budget do
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0)[1]
  if not oldest or oldest == id then break end
  redis.call('ZREM', KEYS[1], oldest)
  local v = redis.call('HGET', KEYS[2], oldest)
  redis.call('HDEL', KEYS[2], oldest)
  local s = ''
  if v then
    local b
    b, s = string.match(v, '^(%d+):(.*)$')
    total = redis.call('DECRBY', KEYS[3], tonumber(b))
  end
  out[#out+1] = oldest
  out[#out+1] = s
end
return out`)

// addAnswerSrc adds answer ARGV[2] to a session's set and refreshes the
// session (KEYS: record, turns, answers; TTL ARGV[1] ms). It runs in a
// pipeline, as EVAL.
const addAnswerSrc = refreshLua + `
redis.call('SADD', KEYS[3], ARGV[2])
return refresh(KEYS[1], KEYS[2], KEYS[3], ARGV[1])`

// PutAnswer keeps the pages of an answer for chat-page, evicting the
// oldest answers (of every session and process sharing the Redis) beyond
// the budget for pages. An answer larger than the whole budget keeps its
// first pages that fit (at least one); Dropped counts the rest.
//
// The answer, the budget and the answer's session are keys of three
// slots: the answer is written with the budget's count (one round trip),
// then the evicted answers are deleted and the answer joins its session
// (a second), then the session's answers, this one too, get its deadline (a third). Two processes putting answers at once may keep a
// little more than the budget for a moment; every answer still expires
// with its session.
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
	p := s.rdb.Pipeline()
	set := p.Set(ctx, s.answerKey(a.ID), data, s.opts.TTL)
	evictCmd := p.EvalSha(ctx, pageScript.Hash(), s.pageKeys(), a.ID, size, s.opts.MaxPagedBytes, a.SessionID)
	_, _ = p.Exec(ctx) // each command's error is its own, below
	if err := set.Err(); err != nil {
		return s.fail(ctx, err)
	}
	if isNoScript(evictCmd.Err()) {
		// The node lost its scripts (a restart): once more, with the
		// script's text.
		evictCmd = pageScript.Eval(ctx, s.rdb, s.pageKeys(), a.ID, size, s.opts.MaxPagedBytes, a.SessionID)
	}
	evicted, err := evictCmd.StringSlice()
	if err != nil {
		return s.fail(ctx, err)
	}
	if len(evicted) == 0 && a.SessionID == "" {
		return nil
	}
	p = s.rdb.Pipeline()
	for i := 0; i+1 < len(evicted); i += 2 {
		p.Del(ctx, s.answerKey(evicted[i]))
		if sid := evicted[i+1]; checkID(sid) == nil {
			p.SRem(ctx, s.answersKey(sid), evicted[i])
		}
	}
	var added *redis.Cmd
	if a.SessionID != "" {
		added = p.Eval(ctx, addAnswerSrc, s.sessionKeys(a.SessionID), s.ttlMillis(), a.ID)
	}
	if _, err := p.Exec(ctx); err != nil {
		return s.fail(ctx, err)
	}
	if added == nil {
		return nil
	}
	at, answers, err := refreshed(added.Val())
	if err != nil {
		return fmt.Errorf("%w: Redis at %s: %v", session.ErrUnavailable, s.addr, err) //nolint:errorlint // the cause is told, not wrapped: a store error is told by session.ErrUnavailable alone, never as a timeout or cancellation of the call
	}
	return s.refreshAnswers(ctx, a.SessionID, answers, at)
}

func isNoScript(err error) bool { return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") }

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
		return session.PagedAnswer{}, false, fmt.Errorf("session store: answer %s in Redis at %s is corrupt: %w", id, s.addr, err)
	}
	return a, true, nil
}

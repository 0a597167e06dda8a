package redisstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// refreshLua defines refresh(record, turns, answers, ttl), which restarts
// the TTL of a session's keys (its record, turns and set of answers: one
// slot's) with one deadline, read from Redis's clock, and returns {at,
// answer ids…}: the caller gives the answers, each under a key of its own
// slot, the same deadline (refreshAnswers), so that no part of a session
// outlives the rest.
const refreshLua = `
local function refresh(record, turns, answers, ttl)
  local t = redis.call('TIME')
  local at = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ttl))
  redis.call('PEXPIREAT', record, at)
  redis.call('PEXPIREAT', turns, at)
  redis.call('PEXPIREAT', answers, at)
  local out = {at}
  for _, a in ipairs(redis.call('SMEMBERS', answers)) do out[#out+1] = a end
  return out
end
`

// appendScript appends ARGV[2] to the turns (KEYS[2]) and refreshes the
// session (KEYS[1..3], TTL ARGV[1] ms), in one atomic step.
var appendScript = redis.NewScript(refreshLua + `
redis.call('RPUSH', KEYS[2], ARGV[2])
return refresh(KEYS[1], KEYS[2], KEYS[3], ARGV[1])`)

// touchScript writes a session's record (KEYS[1]) as ARGV[3] if it still
// is what the writer read (ARGV[1] "1" and the value ARGV[2], or ARGV[1]
// "0" and none) and refreshes the session (TTL ARGV[4] ms): {at, answer
// ids…}, else {} and nothing changed.
var touchScript = redis.NewScript(refreshLua + `
local cur = redis.call('GET', KEYS[1])
if ARGV[1] == '1' then
  if cur ~= ARGV[2] then return {} end
elseif cur then
  return {}
end
redis.call('SET', KEYS[1], ARGV[3])
return refresh(KEYS[1], KEYS[2], KEYS[3], ARGV[4])`)

// refreshed reads the answer of refresh.
func refreshed(v any) (at int64, answers []string, err error) {
	vs, ok := v.([]any)
	if !ok || len(vs) == 0 {
		return 0, nil, fmt.Errorf("unexpected answer of Redis to a refresh: %T", v)
	}
	str, _ := vs[0].(string)
	if at, err = strconv.ParseInt(str, 10, 64); err != nil {
		return 0, nil, fmt.Errorf("unexpected deadline from Redis: %q", clip(str))
	}
	for _, a := range vs[1:] {
		if id, ok := a.(string); ok {
			answers = append(answers, id)
		}
	}
	return at, answers, nil
}

// expireAnswers gives a session's answers the session's deadline at
// (Unix milliseconds), in p; gone lists those that have gone (dropped for
// the budget) once p has run, for forgetAnswers.
func (s *Store) expireAnswers(ctx context.Context, p redis.Pipeliner, answers []string, at int64) (gone func() []any) {
	cmds := make([]*redis.BoolCmd, len(answers))
	for i, a := range answers {
		cmds[i] = p.PExpireAt(ctx, s.answerKey(a), time.UnixMilli(at))
	}
	return func() []any {
		var out []any
		for i, c := range cmds {
			if ok, err := c.Result(); err == nil && !ok {
				out = append(out, answers[i])
			}
		}
		return out
	}
}

// forgetAnswers removes answers gone from session id's set.
func (s *Store) forgetAnswers(ctx context.Context, id string, gone []any) error {
	if len(gone) == 0 {
		return nil
	}
	return s.rdb.SRem(ctx, s.answersKey(id), gone...).Err()
}

func (s *Store) sessionKeys(id string) []string {
	return []string{s.recordKey(id), s.turnsKey(id), s.answersKey(id)}
}

// Get returns the record of session id.
func (s *Store) Get(ctx context.Context, id string) (session.Record, bool, error) {
	if err := checkID(id); err != nil {
		return session.Record{}, false, err
	}
	data, err := s.rdb.Get(ctx, s.recordKey(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		return session.Record{}, false, nil
	}
	if err != nil {
		return session.Record{}, false, s.fail(ctx, err)
	}
	var r session.Record
	if err := json.Unmarshal(data, &r); err != nil {
		return session.Record{}, false, fmt.Errorf("session store: the record of session %s in Redis at %s is corrupt: %w", id, s.addr, err)
	}
	return r, true, nil
}

// Touch records a finished turn of session id. Two Touches of one session
// at once (in two replicas) both count: the record is read, changed, and
// written by a script only if it is still what was read, else read again.
// Then the indexes of List (keys of other slots, hence not in the
// script) and the session's answers follow in one pipeline.
func (s *Store) Touch(ctx context.Context, id string, t session.Turn, now time.Time) (session.Record, error) {
	if err := checkID(id); err != nil {
		return session.Record{}, err
	}
	for range watchTries {
		data, err := s.rdb.Get(ctx, s.recordKey(id)).Bytes()
		existed := err == nil
		if err != nil && !errors.Is(err, redis.Nil) {
			return session.Record{}, s.fail(ctx, err)
		}
		var r session.Record
		ok := existed && json.Unmarshal(data, &r) == nil
		if !ok {
			// A corrupt record is replaced rather than blocking the
			// session, as the file store does.
			r = session.Record{}
		}
		old := r
		r = session.Apply(r, ok, id, t, now)
		out, err := json.Marshal(r)
		if err != nil {
			return session.Record{}, fmt.Errorf("session store: %w", err)
		}
		was := "0"
		if existed {
			was = "1"
		}
		res, err := touchScript.Run(ctx, s.rdb, s.sessionKeys(id), was, data, out, s.ttlMillis()).Slice()
		if err != nil {
			return session.Record{}, s.fail(ctx, err)
		}
		if len(res) == 0 {
			continue // changed meanwhile
		}
		at, answers, err := refreshed(res)
		if err != nil {
			return session.Record{}, fmt.Errorf("%w: Redis at %s: %v", session.ErrUnavailable, s.addr, err) //nolint:errorlint // the cause is told, not wrapped: a store error is told by session.ErrUnavailable alone, never as a timeout or cancellation of the call
		}
		p := s.rdb.Pipeline()
		if ok && old.LastClient != r.LastClient {
			p.ZRem(ctx, s.clientKey(old.LastClient), id)
		}
		if ok && old.Cwd != r.Cwd {
			p.ZRem(ctx, s.cwdKey(old.Cwd), id)
		}
		s.index(ctx, p, r, false)
		gone := s.expireAnswers(ctx, p, answers, at)
		if _, err := p.Exec(ctx); err != nil {
			return session.Record{}, s.fail(ctx, err)
		}
		if err := s.forgetAnswers(ctx, id, gone()); err != nil {
			return session.Record{}, s.fail(ctx, err)
		}
		return r, nil
	}
	return session.Record{}, fmt.Errorf("%w: Redis at %s: session %s changed under %d tries in a row", session.ErrUnavailable, s.addr, id, watchTries)
}

// deleteScript forgets a session: KEYS are its record, turns and set of
// answers; it returns the ids of its answers, which Delete deletes after.
var deleteScript = redis.NewScript(`
local answers = redis.call('SMEMBERS', KEYS[3])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
return answers`)

// unpageSrc removes answers (ARGV) from the page budget (KEYS: pages,
// pagesizes, pagebytes). It runs in pipelines, as EVAL: EVALSHA's
// fallback to EVAL needs an answer first.
const unpageSrc = `
for _, a in ipairs(ARGV) do
  redis.call('ZREM', KEYS[1], a)
  local v = redis.call('HGET', KEYS[2], a)
  if v then
    redis.call('HDEL', KEYS[2], a)
    redis.call('DECRBY', KEYS[3], tonumber(string.match(v, '^(%d+)')))
  end
end
return 1`

// Delete forgets session id: its record, turns and answers, then its
// entries in the indexes and the page budget.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	// The record names the indexes of its owner and client. A Touch
	// between this read and the script leaves the id in another client's
	// index, where List skips and removes it.
	r, _, err := s.Get(ctx, id)
	if err != nil && errors.Is(err, session.ErrUnavailable) {
		return err
	}
	answers, err := deleteScript.Run(ctx, s.rdb, s.sessionKeys(id)).StringSlice()
	if err != nil {
		return s.fail(ctx, err)
	}
	p := s.rdb.Pipeline()
	if len(answers) > 0 {
		ids := make([]any, len(answers))
		for i, a := range answers {
			ids[i] = a
			p.Del(ctx, s.answerKey(a))
		}
		p.Eval(ctx, unpageSrc, s.pageKeys()[:3], ids...)
	}
	for _, k := range []string{s.indexKey(), s.ownerKey(r.Owner), s.clientKey(r.LastClient), s.cwdKey(r.Cwd)} {
		p.ZRem(ctx, k, id)
	}
	if _, err := p.Exec(ctx); err != nil {
		return s.fail(ctx, err)
	}
	return nil
}

// LoadTurns returns the turns of session id, oldest first.
func (s *Store) LoadTurns(ctx context.Context, id string) ([]json.RawMessage, bool, error) {
	if err := checkID(id); err != nil {
		return nil, false, err
	}
	vals, err := s.rdb.LRange(ctx, s.turnsKey(id), 0, -1).Result()
	if err != nil {
		return nil, false, s.fail(ctx, err)
	}
	if len(vals) == 0 {
		return nil, false, nil
	}
	turns := make([]json.RawMessage, len(vals))
	for i, v := range vals {
		turns[i] = json.RawMessage(v)
	}
	return turns, true, nil
}

// AppendTurn appends one turn to session id's conversation and restarts
// the session's TTL, in one atomic script. When it returns, Redis has the
// turn in memory: what a Redis crash then loses depends on its
// persistence settings (appendonly, save), not on this server.
func (s *Store) AppendTurn(ctx context.Context, id string, turn json.RawMessage) error {
	if err := checkID(id); err != nil {
		return err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, turn); err != nil {
		return fmt.Errorf("session store: a turn of session %s is not valid JSON: %w", id, err)
	}
	res, err := appendScript.Run(ctx, s.rdb, s.sessionKeys(id), s.ttlMillis(), compact.Bytes()).Slice()
	if err != nil {
		return s.fail(ctx, err)
	}
	at, answers, err := refreshed(res)
	if err != nil {
		return fmt.Errorf("%w: Redis at %s: %v", session.ErrUnavailable, s.addr, err) //nolint:errorlint // the cause is told, not wrapped: a store error is told by session.ErrUnavailable alone, never as a timeout or cancellation of the call
	}
	return s.refreshAnswers(ctx, id, answers, at)
}

// refreshAnswers gives the answers of session id the deadline at, one
// round trip when it has answers, none else.
func (s *Store) refreshAnswers(ctx context.Context, id string, answers []string, at int64) error {
	if len(answers) == 0 {
		return nil
	}
	p := s.rdb.Pipeline()
	gone := s.expireAnswers(ctx, p, answers, at)
	if _, err := p.Exec(ctx); err != nil {
		return s.fail(ctx, err)
	}
	if err := s.forgetAnswers(ctx, id, gone()); err != nil {
		return s.fail(ctx, err)
	}
	return nil
}

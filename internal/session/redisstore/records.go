package redisstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// refreshLua defines refresh(record, turns, answers, ttl, answerPrefix),
// which restarts the TTL of every key of a session: its record, turns, set
// of answers and each answer in that set (key answerPrefix..id),
// forgetting the ids of answers gone (dropped for the budget). All get the
// same deadline, read once from Redis's clock, so that no part of a
// session outlives the rest.
const refreshLua = `
local function refresh(record, turns, answers, ttl, answerPrefix)
  local t = redis.call('TIME')
  local at = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ttl))
  redis.call('PEXPIREAT', record, at)
  redis.call('PEXPIREAT', turns, at)
  redis.call('PEXPIREAT', answers, at)
  for _, a in ipairs(redis.call('SMEMBERS', answers)) do
    if redis.call('PEXPIREAT', answerPrefix .. a, at) == 0 then redis.call('SREM', answers, a) end
  end
end
`

// refreshSrc refreshes the session whose keys are KEYS[1..3]; ARGV[1] is
// the TTL in milliseconds, ARGV[2] the answer key prefix.
const refreshSrc = refreshLua + `
refresh(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2])
return 1`

// appendScript appends ARGV[3] to the turns (KEYS[2]) and refreshes the
// session, in one atomic step.
var appendScript = redis.NewScript(refreshLua + `
redis.call('RPUSH', KEYS[2], ARGV[3])
refresh(KEYS[1], KEYS[2], KEYS[3], ARGV[1], ARGV[2])
return 1`)

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
		return session.Record{}, false, fmt.Errorf("session store: the record of session %s in Redis at %s is corrupt: %v", id, s.addr, err)
	}
	return r, true, nil
}

// Touch records a finished turn of session id. Two Touches of one session
// at once (in two replicas) both count: the read and the write are one
// optimistic transaction (WATCH … MULTI … EXEC), retried when another
// changed the record meanwhile.
func (s *Store) Touch(ctx context.Context, id string, t session.Turn, now time.Time) (session.Record, error) {
	if err := checkID(id); err != nil {
		return session.Record{}, err
	}
	var r session.Record
	txn := func(tx *redis.Tx) error {
		data, err := tx.Get(ctx, s.recordKey(id)).Bytes()
		existed := err == nil
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		r = session.Record{}
		if existed && json.Unmarshal(data, &r) != nil {
			// A corrupt record is replaced rather than blocking the
			// session, as the file store does.
			existed, r = false, session.Record{}
		}
		old := r
		r = session.Apply(r, existed, id, t, now)
		out, err := json.Marshal(r)
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, s.recordKey(id), out, s.opts.TTL)
			if existed && old.LastClient != r.LastClient {
				p.ZRem(ctx, s.clientKey(old.LastClient), id)
			}
			if existed && old.Cwd != r.Cwd {
				p.ZRem(ctx, s.cwdKey(old.Cwd), id)
			}
			s.index(ctx, p, r, false)
			p.Eval(ctx, refreshSrc, s.sessionKeys(id), s.ttlMillis(), s.key("answer", ""))
			return nil
		})
		return err
	}
	for range watchTries {
		err := s.rdb.Watch(ctx, txn, s.recordKey(id))
		if errors.Is(err, redis.TxFailedErr) {
			continue
		}
		if err != nil {
			return session.Record{}, s.fail(ctx, err)
		}
		return r, nil
	}
	return session.Record{}, fmt.Errorf("%w: Redis at %s: session %s changed under %d tries in a row", session.ErrUnavailable, s.addr, id, watchTries)
}

// deleteScript forgets a session: KEYS are its record, turns and set of
// answers, the index of all sessions, the page accounting (pages,
// pagesizes, pagebytes) and the indexes of its owner and client; ARGV[1]
// is the id, ARGV[2] the answer key prefix.
var deleteScript = redis.NewScript(`
for _, a in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  redis.call('DEL', ARGV[2] .. a)
  redis.call('ZREM', KEYS[5], a)
  local v = redis.call('HGET', KEYS[6], a)
  if v then
    redis.call('HDEL', KEYS[6], a)
    redis.call('DECRBY', KEYS[7], tonumber(string.match(v, '^(%d+)')))
  end
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('ZREM', KEYS[4], ARGV[1])
redis.call('ZREM', KEYS[8], ARGV[1])
redis.call('ZREM', KEYS[9], ARGV[1])
return 1`)

// Delete forgets session id: its record, turns and answers.
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
	keys := append(s.sessionKeys(id), s.indexKey(), s.prefix+"pages", s.prefix+"pagesizes", s.prefix+"pagebytes",
		s.ownerKey(r.Owner), s.clientKey(r.LastClient))
	if err := deleteScript.Run(ctx, s.rdb, keys, id, s.key("answer", "")).Err(); err != nil {
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
		return fmt.Errorf("session store: a turn of session %s is not valid JSON: %v", id, err)
	}
	if err := appendScript.Run(ctx, s.rdb, s.sessionKeys(id), s.ttlMillis(), s.key("answer", ""), compact.Bytes()).Err(); err != nil {
		return s.fail(ctx, err)
	}
	return nil
}

// Package redisstore keeps sessions in Redis, so that several server
// processes on several hosts (replicas behind a load balancer) can
// continue each other's sessions, serve each other's answer pages and
// take turns on one session one at a time.
//
// Keys, all under the configured prefix P (config.DefaultStorePrefix unless
// set), for a session ID and an answer A:
//
//	P session:ID   the record, JSON
//	P turns:ID     the conversation's turns, a list (RPUSH: O(1) a turn)
//	P answers:ID   the ids of the session's paged answers, a set
//	P answer:A     a paged answer, JSON
//	P lease:ID     the session's lease: a random token of its holder
//	P byupdate     every session id, a sorted set scored by last update
//	               (minus Record.Updated in Unix microseconds, so that the
//	               newest comes first and the lower id among equal times)
//	P byowner:O    the ids of the sessions of owner O (O "" for those
//	               without), scored the same
//	P byclient:C   the ids of the sessions whose latest turn client C ran
//	P bycwd:D      the ids of the sessions whose latest turn was in D
//	P pages        the kept answers in the order they came (for the budget)
//	P pagesizes    each kept answer's bytes and session
//	P pagebytes    the bytes of all kept answers
//	P pageseq      the counter ordering P pages
//
// Every key of a session carries the session's TTL, restarted on every
// Touch and AppendTurn for all of them at once; Redis drops an expired
// session by itself. The indexes (byupdate, byowner, byclient) are
// written with the record, in its transaction, and expire two TTLs after
// their newest member's Touch; List skips and removes the ids whose
// record has expired (and a session back after its expiry under another
// owner or client from the old one's index). The index of earlier
// versions, P sessions, is read once into these at Open and left to
// expire.
package redisstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// Timeouts of the client. A Redis that has gone away must fail a call in
// seconds, not hang it: the caller's MCP client is waiting.
const (
	dialTimeout = 2 * time.Second
	ioTimeout   = 3 * time.Second
	poolTimeout = 4 * time.Second
	// releaseTimeout bounds giving a lease back, which has no caller's
	// context.
	releaseTimeout = 5 * time.Second
	// maxWait caps the wait between two tries at a lease another process
	// holds: its release wakes nobody here.
	maxWait = 100 * time.Millisecond
	// watchTries bounds the optimistic retries of a Touch racing other
	// Touches of the same session.
	watchTries = 100
)

// Store is a session.Store in Redis. It is safe for concurrent use.
type Store struct {
	rdb    *redis.Client
	addr   string
	opts   session.Options
	prefix string

	mu      sync.Mutex
	closed  bool
	done    chan struct{}            // closed by Close
	wake    map[string]chan struct{} // by session id: closed when this process releases its lease
	held    map[*lease]struct{}
	renewal sync.WaitGroup
	// minWait and maxWait bound the wait between two tries at a held
	// lease; onWait, when set, is called as a waiter starts waiting.
	// Tests set them to show that a release in this process needs no try.
	minWait, maxWait time.Duration
	onWait           func()
}

var _ session.Store = (*Store)(nil)

// lease is one held lease.
type lease struct {
	s     *Store
	id    string
	token string
	stop  chan struct{} // closed to stop the renewal
	once  sync.Once
}

// Open connects to the Redis server at rawURL (redis://[user:password@]host:port/db,
// or rediss:// for TLS) and checks that it answers. The password comes
// from the URL, else from REDIS_PASSWORD.
func Open(ctx context.Context, rawURL string, opts session.Options) (*Store, error) {
	ro, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	if opts, err = withDefaults(opts); err != nil {
		return nil, err
	}
	ro.DialTimeout = dialTimeout
	ro.ReadTimeout, ro.WriteTimeout = ioTimeout, ioTimeout
	ro.PoolTimeout = poolTimeout
	// One retry of a command and one dial a try: a retry hides a dropped
	// idle connection, more of them only delay the error of a Redis that
	// is gone.
	ro.MaxRetries = 1
	ro.DialerRetries = 1
	ro.ContextTimeoutEnabled = true
	// A self-hosted Redis sends no maintenance notifications, and 7.0
	// knows neither them nor CLIENT SETINFO: asking costs a round trip
	// per connection.
	ro.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	ro.DisableIdentity = true
	s := &Store{
		rdb:     redis.NewClient(ro),
		addr:    ro.Addr,
		opts:    opts,
		prefix:  opts.Prefix,
		done:    make(chan struct{}),
		wake:    map[string]chan struct{}{},
		held:    map[*lease]struct{}{},
		minWait: time.Millisecond,
		maxWait: maxWait,
	}
	logOnce.Do(func() { redis.SetLogger(slogLogger{}) })
	if err := s.rdb.Ping(ctx).Err(); err != nil {
		s.rdb.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("session store: connecting to Redis at %s: %w", ro.Addr, ctx.Err())
		}
		return nil, fmt.Errorf("%w: Redis at %s is unreachable (%v): start it, or fix the address, database or password in the store URL (%s); a password may also come from REDIS_PASSWORD",
			session.ErrUnavailable, ro.Addr, err, redact(rawURL))
	}
	if err := s.importOldIndex(ctx); err != nil {
		s.rdb.Close()
		return nil, fmt.Errorf("session store: reading the index of an earlier version: %w", s.fail(ctx, err))
	}
	return s, nil
}

// logOnce routes the client's own log (a line per failed dial, among
// others) to slog at debug level: the errors that matter reach the
// callers, wrapped in session.ErrUnavailable. The client's logger is
// global, hence once per process.
var logOnce sync.Once

type slogLogger struct{}

func (slogLogger) Printf(ctx context.Context, format string, v ...any) {
	slog.DebugContext(ctx, "redis client: "+fmt.Sprintf(format, v...))
}

// parseURL turns a redis:// or rediss:// URL into client options.
func parseURL(rawURL string) (*redis.Options, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Host == "" {
		return nil, fmt.Errorf("session store: %q is not a Redis URL: expected redis://[user:password@]host:port/db or rediss://… for TLS", redact(rawURL))
	}
	ro, err := redis.ParseURL(rawURL)
	if err != nil {
		return nil, fmt.Errorf("session store: %s: %v (expected redis://[user:password@]host:port/db)", redact(rawURL), err)
	}
	if ro.Password == "" {
		ro.Password = os.Getenv("REDIS_PASSWORD")
	}
	return ro, nil
}

// redact returns rawURL without its password, for messages and logs.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(an unparsable URL)"
	}
	return u.Redacted()
}

func withDefaults(o session.Options) (session.Options, error) {
	if o.TTL < 0 || o.LeaseTTL < 0 || o.MaxPagedBytes < 0 {
		return o, fmt.Errorf("session store: TTL, lease TTL and page budget must not be negative (got %v, %v, %d)", o.TTL, o.LeaseTTL, o.MaxPagedBytes)
	}
	o = o.WithDefaults()
	// Redis counts expiry in milliseconds: less would mean "now".
	if o.TTL < time.Millisecond || o.LeaseTTL < 3*time.Millisecond {
		return o, fmt.Errorf("session store: TTL %v or lease TTL %v is too short for Redis (at least 1ms and 3ms)", o.TTL, o.LeaseTTL)
	}
	return o, nil
}

// Addr is the host:port of the Redis server.
func (s *Store) Addr() string { return s.addr }

func (s *Store) key(kind, id string) string { return s.prefix + kind + ":" + id }

func (s *Store) recordKey(id string) string   { return s.key("session", id) }
func (s *Store) turnsKey(id string) string    { return s.key("turns", id) }
func (s *Store) answersKey(id string) string  { return s.key("answers", id) }
func (s *Store) answerKey(id string) string   { return s.key("answer", id) }
func (s *Store) leaseKey(id string) string    { return s.key("lease", id) }
func (s *Store) indexKey() string             { return s.prefix + "byupdate" }
func (s *Store) ownerKey(owner string) string { return s.prefix + "byowner:" + owner }
func (s *Store) clientKey(client string) string {
	return s.prefix + "byclient:" + client
}
func (s *Store) cwdKey(cwd string) string { return s.prefix + "bycwd:" + cwd }

// oldIndexKey is the index of earlier versions, scored by Unix
// milliseconds.
func (s *Store) oldIndexKey() string { return s.prefix + "sessions" }

// score is a record's score in the indexes: newest first, exact to the
// microsecond (a float64 holds the integers of Unix microseconds exactly).
func score(t time.Time) float64 { return -float64(t.UnixMicro()) }

func (s *Store) ttlMillis() int64 { return s.opts.TTL.Milliseconds() }

// fail turns an error of the client into the store's: the caller's
// context ending stays what it is; anything else is Redis failing, a
// system error wrapping session.ErrUnavailable.
func (s *Store) fail(ctx context.Context, err error) error {
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return fmt.Errorf("session store: %w", ctx.Err())
	}
	if errors.Is(err, redis.ErrClosed) {
		return fmt.Errorf("session store: closed")
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		return fmt.Errorf("%w: Redis at %s answered with an error: %v", session.ErrUnavailable, s.addr, err)
	}
	return fmt.Errorf("%w: Redis at %s is unreachable: %v", session.ErrUnavailable, s.addr, err)
}

func checkID(id string) error {
	if !session.IsUUID(id) || id != lower(id) {
		return fmt.Errorf("session store: invalid session id %q: expected a lower-case UUID", clip(id))
	}
	return nil
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

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

// index adds r to the indexes, with p (in a Touch's transaction; nx, when
// reading the old index, adds only ids they lack), and restarts their TTL:
// twice the sessions', so that they outlive a session whose TTL a later
// AppendTurn or PutAnswer restarted.
func (s *Store) index(ctx context.Context, p redis.Pipeliner, r session.Record, nx bool) {
	z := redis.Z{Score: score(r.Updated), Member: r.ID}
	for _, k := range []string{s.indexKey(), s.ownerKey(r.Owner), s.clientKey(r.LastClient), s.cwdKey(r.Cwd)} {
		if nx {
			p.ZAddNX(ctx, k, z)
		} else {
			p.ZAdd(ctx, k, z)
		}
		p.PExpire(ctx, k, 2*s.opts.TTL)
	}
}

// listBatch is how many ids List reads of an index in one round trip.
const listBatch = 100

// source is one index List walks, newest first, a batch at a time.
type source struct {
	key  string
	keep func(session.Record) bool // whether a record is in this index still
	buf  []redis.Z
	next int64 // the rank of the first id after buf
	done bool
	gone []any // ids whose record has gone
}

// List returns the records f selects, newest first. It walks the
// smallest index that holds them all (the client's, the cwd's, the
// owner's and that of sessions without owner merged, or all sessions),
// checks the rest of
// f on the records and stops as soon as it has the page and knows whether
// more follow. Ids whose record has gone are removed from the index
// after.
func (s *Store) List(ctx context.Context, f session.Filter) ([]session.Record, bool, error) {
	if err := f.Check(); err != nil {
		return nil, false, err
	}
	var srcs []*source
	switch {
	case f.Client != "":
		srcs = []*source{{key: s.clientKey(f.Client), keep: func(r session.Record) bool { return r.LastClient == f.Client }}}
	case f.Cwd != "":
		srcs = []*source{{key: s.cwdKey(f.Cwd), keep: func(r session.Record) bool { return r.Cwd == f.Cwd }}}
	case f.ByOwner:
		for _, o := range []string{"", f.Owner} {
			srcs = append(srcs, &source{key: s.ownerKey(o), keep: func(r session.Record) bool { return r.Owner == o }})
			if f.Owner == "" {
				break
			}
		}
	default:
		srcs = []*source{{key: s.indexKey(), keep: func(session.Record) bool { return true }}}
	}
	recs, more, err := s.walk(ctx, f, srcs)
	for _, src := range srcs {
		if perr := s.prune(ctx, src.key, src.gone); perr != nil && err == nil {
			err = perr
		}
	}
	if err != nil {
		return nil, false, err
	}
	return recs, more, nil
}

// walk merges the sources newest first and returns the page of f.
func (s *Store) walk(ctx context.Context, f session.Filter, srcs []*source) ([]session.Record, bool, error) {
	var recs []session.Record
	seen := map[string]bool{} // a session moved to the front meanwhile comes once
	skipped := 0
	// The first batch of each index is the page and one more, when that
	// is fewer than listBatch.
	size := int64(listBatch)
	if f.Offset < listBatch && f.Limit < listBatch {
		size = min(size, int64(f.Offset+f.Limit+1))
	}
	for {
		// The next batch of ids, newest first, from all sources.
		type cand struct {
			id  string
			src *source
		}
		var batch []cand
		for int64(len(batch)) < size {
			var best *source
			for _, src := range srcs {
				if len(src.buf) == 0 && !src.done {
					zs, err := s.rdb.ZRangeWithScores(ctx, src.key, src.next, src.next+size-1).Result()
					if err != nil {
						return nil, false, s.fail(ctx, err)
					}
					src.buf, src.next, src.done = zs, src.next+int64(len(zs)), int64(len(zs)) < size
				}
				if len(src.buf) > 0 && (best == nil || less(src.buf[0], best.buf[0])) {
					best = src
				}
			}
			if best == nil {
				break
			}
			batch = append(batch, cand{best.buf[0].Member.(string), best})
			best.buf = best.buf[1:]
		}
		if len(batch) == 0 {
			return recs, false, nil
		}
		size = listBatch
		keys := make([]string, len(batch))
		for i, c := range batch {
			keys[i] = s.recordKey(c.id)
		}
		vals, err := s.rdb.MGet(ctx, keys...).Result()
		if err != nil {
			return nil, false, s.fail(ctx, err)
		}
		for i, v := range vals {
			c := batch[i]
			str, ok := v.(string)
			if !ok {
				c.src.gone = append(c.src.gone, c.id)
				continue
			}
			var r session.Record
			if json.Unmarshal([]byte(str), &r) != nil || !c.src.keep(r) || !f.Match(r) || seen[r.ID] {
				continue
			}
			seen[r.ID] = true
			if skipped < f.Offset {
				// Counted, not summed with limit: offset+limit can
				// overflow for a made-up cursor.
				skipped++
				continue
			}
			if len(recs) >= f.Limit {
				return recs, true, nil
			}
			recs = append(recs, r)
		}
	}
}

// less orders index entries as List does: the lower score (the newer)
// first, the lower id among equal scores.
func less(a, b redis.Z) bool {
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	return a.Member.(string) < b.Member.(string)
}

// importOldIndex reads the index of earlier versions (P sessions) into
// the indexes of List, adding only the sessions they lack (a newer Touch
// has indexed the others), then lets it expire with its last sessions:
// its TTL marks it read, since its writers set none. Several processes
// may read it at once: each adds the same.
func (s *Store) importOldIndex(ctx context.Context) error {
	ttl, err := s.rdb.PTTL(ctx, s.oldIndexKey()).Result()
	if err != nil || ttl != -1 { // -2: no such key; positive: read already
		return err
	}
	imported := 0
	for start := int64(0); ; start += listBatch {
		ids, err := s.rdb.ZRange(ctx, s.oldIndexKey(), start, start+listBatch-1).Result()
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			break
		}
		keys := make([]string, len(ids))
		for i, id := range ids {
			keys[i] = s.recordKey(id)
		}
		vals, err := s.rdb.MGet(ctx, keys...).Result()
		if err != nil {
			return err
		}
		p := s.rdb.Pipeline()
		for _, v := range vals {
			var r session.Record
			if str, ok := v.(string); ok && json.Unmarshal([]byte(str), &r) == nil && checkID(r.ID) == nil {
				s.index(ctx, p, r, true)
				imported++
			}
		}
		if _, err := p.Exec(ctx); err != nil {
			return err
		}
	}
	// Only a process of an earlier version adds to it now.
	if err := s.rdb.PExpire(ctx, s.oldIndexKey(), s.opts.TTL).Err(); err != nil {
		return err
	}
	slog.InfoContext(ctx, "session store: indexed the sessions of an earlier version's index", "redis", s.addr, "sessions", imported)
	return nil
}

// prune removes the ids of expired sessions from an index, unless a
// Touch recreated one meanwhile.
var pruneScript = redis.NewScript(`
local n = 0
for _, id in ipairs(ARGV) do
  if redis.call('EXISTS', KEYS[2] .. id) == 0 then n = n + redis.call('ZREM', KEYS[1], id) end
end
return n`)

func (s *Store) prune(ctx context.Context, index string, ids []any) error {
	if len(ids) == 0 {
		return nil
	}
	if err := pruneScript.Run(ctx, s.rdb, []string{index, s.key("session", "")}, ids...).Err(); err != nil {
		return s.fail(ctx, err)
	}
	return nil
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
	size := 0
	for _, p := range a.Pages {
		size += len(p)
	}
	if size > s.opts.MaxPagedBytes {
		kept, n := 0, 0
		for kept < len(a.Pages) && (kept == 0 || n+len(a.Pages[kept]) <= s.opts.MaxPagedBytes) {
			n += len(a.Pages[kept])
			kept++
		}
		a.Pages = a.Pages[:kept:kept]
		a.Dropped += size - n
		size = n
	}
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

// Lua for leases: each compares the holder's token before acting, so that
// a holder whose lease expired (and was taken by another) cannot renew or
// release the new holder's.
var (
	renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`)
	releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)
)

// Lease takes session id's lease: SET NX with a random token and the
// lease TTL, renewed by a goroutine every third of the TTL while held. A
// waiter is woken at once when a holder in this process releases; a
// holder in another process is watched for with tries a short, capped
// backoff apart (its release, or the expiry of a dead holder's lease).
func (s *Store) Lease(ctx context.Context, id string) (func(), error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	var tok [16]byte
	_, _ = rand.Read(tok[:]) // crypto/rand.Read never fails on supported platforms
	token := hex.EncodeToString(tok[:])
	wait := s.minWait
	for {
		// Take the wake-up channel before trying, so that a release
		// between the try and the wait is not missed.
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, errors.New("session store: closed")
		}
		wake, ok := s.wake[id]
		if !ok {
			wake = make(chan struct{})
			s.wake[id] = wake
		}
		s.mu.Unlock()

		ok, err := s.rdb.SetNX(ctx, s.leaseKey(id), token, s.opts.LeaseTTL).Result()
		if err != nil {
			return nil, s.fail(ctx, err)
		}
		if ok {
			return s.hold(id, token)
		}
		if s.onWait != nil {
			s.onWait()
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-s.done:
			t.Stop()
			return nil, errors.New("session store: closed")
		case <-wake:
			wait = s.minWait
		case <-t.C:
			wait = min(2*wait, s.maxWait)
		}
		t.Stop()
	}
}

// hold starts renewing a lease just taken and returns its release.
func (s *Store) hold(id, token string) (func(), error) {
	l := &lease{s: s, id: id, token: token, stop: make(chan struct{})}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		l.giveBack()
		return nil, errors.New("session store: closed")
	}
	s.held[l] = struct{}{}
	s.renewal.Add(1)
	s.mu.Unlock()
	go l.renew()
	return l.release, nil
}

// renew extends the lease every third of its TTL until released. A renewal
// that fails (Redis away for a moment) is tried again at the next tick; a
// lease found taken by another (it expired meanwhile) is not renewed.
func (l *lease) renew() {
	defer l.s.renewal.Done()
	every := l.s.opts.LeaseTTL / 3
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		n, err := renewScript.Run(ctx, l.s.rdb, []string{l.s.leaseKey(l.id)}, l.token, l.s.opts.LeaseTTL.Milliseconds()).Int()
		cancel()
		if err == nil && n == 0 {
			return
		}
	}
}

// release stops the renewal, gives the lease back and wakes this process's
// waiters for it. Later calls do nothing.
func (l *lease) release() {
	l.once.Do(func() {
		close(l.stop)
		l.giveBack()
		s := l.s
		s.mu.Lock()
		delete(s.held, l)
		if w, ok := s.wake[l.id]; ok {
			close(w)
			delete(s.wake, l.id)
		}
		s.mu.Unlock()
	})
}

// giveBack deletes the lease in Redis if it is still ours. When Redis
// cannot be reached, the lease expires by itself after the lease TTL.
func (l *lease) giveBack() {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	_ = releaseScript.Run(ctx, l.s.rdb, []string{l.s.leaseKey(l.id)}, l.token).Err()
}

// Close gives back the leases still held, stops their renewal and closes
// the connections. Calls after Close fail.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	held := make([]*lease, 0, len(s.held))
	for l := range s.held {
		held = append(held, l)
	}
	s.mu.Unlock()
	for _, l := range held {
		l.release()
	}
	s.renewal.Wait()
	return s.rdb.Close()
}

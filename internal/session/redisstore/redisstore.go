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
//	P oauth:URL    the MCP host's OAuth tokens for the server URL, a hash:
//	               issuer → token (JSON, as the host gives it), expiring
//	               OAuthTokenTTL after the last save
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
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
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
	if !session.IsUUID(id) || strings.ToLower(id) != id {
		return fmt.Errorf("session store: invalid session id %q: expected a lower-case UUID", clip(id))
	}
	return nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
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

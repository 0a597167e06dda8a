// Package redisstore keeps sessions in Redis, so that several server
// processes on several hosts (replicas behind a load balancer) can
// continue each other's sessions, serve each other's answer pages and
// take turns on one session one at a time.
//
// Keys, all under the configured prefix P (config.DefaultStorePrefix unless
// set), for a session ID and an answer A:
//
//	P session:{ID}   the record, JSON
//	P turns:{ID}     the conversation's turns, a list (RPUSH: O(1) a turn)
//	P answers:{ID}   the ids of the session's paged answers, a set
//	P answer:{A}     a paged answer, JSON
//	P lease:{ID}     the session's lease: a random token of its holder
//	P byupdate       every session id, a sorted set scored by last update
//	                 (minus Record.Updated in Unix microseconds, so that the
//	                 newest comes first and the lower id among equal times)
//	P byowner:O      the ids of the sessions of owner O (O "" for those
//	                 without), scored the same
//	P byclient:C     the ids of the sessions whose latest turn client C ran
//	P bycwd:D        the ids of the sessions whose latest turn was in D
//	P {pages}        the kept answers in the order they came (for the budget)
//	P {pages}sizes   each kept answer's bytes and session
//	P {pages}bytes   the bytes of all kept answers
//	P {pages}seq     the counter ordering P {pages}
//	P rate:K         a rate limit's token bucket
//	P oauth:URL      the MCP host's OAuth tokens for the server URL, a hash:
//	                 issuer → token (JSON, as the host gives it), expiring
//	                 OAuthTokenTTL after the last save
//	P {jobs}…        the background jobs (see jobs.go)
//	P manifest…      file search's manifests (see manifests.go)
//
// The braces are Redis Cluster hash tags: a session's keys share a slot,
// so that the scripts that change a session touch one node's keys only;
// what spans sessions (the indexes, the page budget, the answers, each of
// a slot of its own) follows in pipelines, which a cluster client sends
// to all the nodes concerned at once. The same code serves one Redis, a
// cluster and Sentinel's master, at the same round trips a call.
//
// Every key of a session carries the session's TTL, restarted on every
// Touch and AppendTurn for all of them at once; Redis drops an expired
// session by itself. The indexes (byupdate, byowner, byclient) are
// written right after the record and expire two TTLs after their newest
// member's Touch; List skips the ids whose record has expired (and a
// session back after its expiry under another owner or client from the
// old one's index) and removes them unless a Touch indexed them again.
// The keys of earlier versions, without hash tags, are renamed at Open
// (see migrate); their index P sessions is read once into these and left
// to expire.
package redisstore

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
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
	rdb    redis.UniversalClient
	addr   string // where Redis is, for messages: host:port, or the nodes or sentinels and master
	opts   session.Options
	prefix string

	mu      sync.Mutex
	closed  bool
	done    chan struct{}            // closed by Close
	wake    map[string]chan struct{} // by session id: closed when this process releases its lease
	held    map[*lease]struct{}
	renewal sync.WaitGroup
	jobWake jobs.Notifier // wakes the waiters of a job changed here (jobs.go)
	// minWait and maxWait bound the wait between two tries at a held
	// lease; onWait, when set, is called as a waiter starts waiting.
	// Tests set them to show that a release in this process needs no try.
	minWait, maxWait time.Duration
	onWait           func()
}

var _ session.Store = (*Store)(nil)

// Open connects to the Redis that rawURL names and checks that it answers:
//
//	redis://[user:password@]host:port/db      one server (rediss:// for TLS)
//	redis+cluster://[user:password@]h1:p1,h2:p2,…   a Redis Cluster: any of its nodes (rediss+cluster:// for TLS)
//	redis+sentinel://[user:password@]h1:p1,h2:p2,…/master[?db=N]   the master that these sentinels name (rediss+sentinel:// for TLS)
//
// The password comes from the URL, else from REDIS_PASSWORD; a sentinel's
// own, when the sentinels want one, from REDIS_SENTINEL_PASSWORD. A
// redis:// URL naming a node of a cluster is refused: name the cluster.
func Open(ctx context.Context, rawURL string, opts session.Options) (*Store, error) {
	tg, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	if opts, err = withDefaults(opts); err != nil {
		return nil, err
	}
	s := &Store{
		rdb:     tg.client(),
		addr:    tg.where,
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
			return nil, fmt.Errorf("session store: connecting to Redis at %s: %w", tg.where, ctx.Err())
		}
		return nil, fmt.Errorf("%w: Redis at %s is unreachable (%v): start it, or fix the address, database or password in the store URL (%s); a password may also come from REDIS_PASSWORD",
			session.ErrUnavailable, tg.where, err, Redact(rawURL)) //nolint:errorlint // the cause is told, not wrapped: a store error is told by session.ErrUnavailable alone, never as a timeout or cancellation of the call
	}
	if tg.kind != kindCluster {
		if err := s.refuseClusterNode(ctx, rawURL); err != nil {
			s.rdb.Close()
			return nil, err
		}
		if err := s.migrate(ctx); err != nil {
			s.rdb.Close()
			return nil, fmt.Errorf("session store: renaming the keys of an earlier version: %w", s.fail(ctx, err))
		}
	}
	if err := s.importOldIndex(ctx); err != nil {
		s.rdb.Close()
		return nil, fmt.Errorf("session store: reading the index of an earlier version: %w", s.fail(ctx, err))
	}
	return s, nil
}

// refuseClusterNode fails when a redis:// URL names a node of a cluster:
// the store would then see one node's keys only, and its scripts would be
// refused for keys that other nodes own.
func (s *Store) refuseClusterNode(ctx context.Context, rawURL string) error {
	info, err := s.rdb.Info(ctx, "cluster").Result()
	if err != nil {
		// A Redis without INFO (a proxy) is not a cluster node.
		var reply redis.Error
		if errors.As(err, &reply) {
			return nil
		}
		return fmt.Errorf("session store: %w", s.fail(ctx, err))
	}
	if strings.Contains(info, "cluster_enabled:1") {
		u := Redact(rawURL)
		_, rest, _ := strings.Cut(u, "://")
		return fmt.Errorf("session store: Redis at %s is a node of a Redis Cluster: name the cluster, as redis+cluster://%s (rediss+cluster:// for TLS), listing one or more of its nodes", s.addr, strings.TrimSuffix(strings.SplitN(rest, "/", 2)[0], "/"))
	}
	return nil
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

// The kinds of Redis a store URL names.
const (
	kindSingle   = "redis"
	kindCluster  = "cluster"
	kindSentinel = "sentinel"
)

// maxNodes caps the nodes or sentinels of a store URL.
const maxNodes = 64

// target is what a store URL names.
type target struct {
	kind  string
	where string // for messages, without a password
	one   *redis.Options
	// For a cluster or sentinels:
	addrs      []string
	master     string
	user, pass string
	db         int
	tls        *tls.Config
}

// client returns a client for t, with the store's timeouts.
func (t *target) client() redis.UniversalClient {
	// One retry of a command and one dial a try: a retry hides a dropped
	// idle connection, more of them only delay the error of a Redis that
	// is gone. A self-hosted Redis sends no maintenance notifications,
	// and 7.0 knows neither them nor CLIENT SETINFO: asking costs a round
	// trip per connection.
	noMaint := &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	switch t.kind {
	case kindCluster:
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: t.addrs, Username: t.user, Password: t.pass, TLSConfig: t.tls,
			DialTimeout: dialTimeout, ReadTimeout: ioTimeout, WriteTimeout: ioTimeout, PoolTimeout: poolTimeout,
			MaxRetries: 1, DialerRetries: 1, ContextTimeoutEnabled: true,
			// A MOVED or ASK after a resharding, or a TRYAGAIN, is
			// followed this many times.
			MaxRedirects:             3,
			DisableIdentity:          true,
			MaintNotificationsConfig: noMaint,
		})
	case kindSentinel:
		return redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: t.master, SentinelAddrs: t.addrs,
			Username: t.user, Password: t.pass, DB: t.db, TLSConfig: t.tls,
			SentinelPassword: os.Getenv("REDIS_SENTINEL_PASSWORD"),
			DialTimeout:      dialTimeout, ReadTimeout: ioTimeout, WriteTimeout: ioTimeout, PoolTimeout: poolTimeout,
			MaxRetries: 1, DialerRetries: 1, ContextTimeoutEnabled: true,
			DisableIdentity: true,
		})
	}
	ro := t.one
	ro.DialTimeout = dialTimeout
	ro.ReadTimeout, ro.WriteTimeout = ioTimeout, ioTimeout
	ro.PoolTimeout = poolTimeout
	ro.MaxRetries = 1
	ro.DialerRetries = 1
	ro.ContextTimeoutEnabled = true
	ro.MaintNotificationsConfig = noMaint
	ro.DisableIdentity = true
	return redis.NewClient(ro)
}

const urlForms = "redis://[user:password@]host:port/db, redis+cluster://[user:password@]host:port,host:port,… or redis+sentinel://[user:password@]host:port,host:port,…/master[?db=N] (rediss… for TLS)"

// parseURL reads a store URL (see Open).
func parseURL(rawURL string) (*target, error) {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	bad := func(why string) error {
		return fmt.Errorf("session store: %q is not a Redis URL (%s): expected %s", Redact(rawURL), why, urlForms)
	}
	if !ok {
		return nil, bad("no scheme")
	}
	switch strings.ToLower(scheme) {
	case "redis", "rediss":
		u, err := url.Parse(rawURL)
		if err != nil || u.Host == "" {
			return nil, bad("no host")
		}
		ro, err := redis.ParseURL(rawURL)
		if err != nil {
			return nil, fmt.Errorf("session store: %s: %w (expected redis://[user:password@]host:port/db)", Redact(rawURL), err)
		}
		if ro.Password == "" {
			ro.Password = os.Getenv("REDIS_PASSWORD")
		}
		return &target{kind: kindSingle, where: ro.Addr, one: ro}, nil
	case "redis+cluster", "rediss+cluster", "redis+sentinel", "rediss+sentinel":
	default:
		return nil, bad("unknown scheme")
	}
	t := &target{kind: kindCluster}
	if strings.HasSuffix(strings.ToLower(scheme), "+sentinel") {
		t.kind = kindSentinel
	}
	rest, query, _ := strings.Cut(rest, "?")
	hosts, path, _ := strings.Cut(rest, "/")
	if i := strings.LastIndex(hosts, "@"); i >= 0 {
		user, pass, _ := strings.Cut(hosts[:i], ":")
		var err1, err2 error
		t.user, err1 = url.PathUnescape(user)
		t.pass, err2 = url.PathUnescape(pass)
		if err1 != nil || err2 != nil {
			return nil, bad("a bad escape in the user or password")
		}
		hosts = hosts[i+1:]
	}
	if t.pass == "" {
		t.pass = os.Getenv("REDIS_PASSWORD")
	}
	for h := range strings.SplitSeq(hosts, ",") {
		host, port, err := net.SplitHostPort(h)
		if err != nil || host == "" || port == "" || strings.ContainsAny(host, "/@?#") {
			return nil, bad(fmt.Sprintf("%q is not host:port", clip(h)))
		}
		if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
			return nil, bad(fmt.Sprintf("%q is not host:port", clip(h)))
		}
		if len(t.addrs) == maxNodes {
			return nil, bad(fmt.Sprintf("over %d hosts", maxNodes))
		}
		t.addrs = append(t.addrs, h)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return nil, bad("a bad query")
	}
	for k, v := range q {
		if t.kind != kindSentinel || k != "db" || len(v) != 1 {
			return nil, bad(fmt.Sprintf("unknown option %q", clip(k)))
		}
		if t.db, err = strconv.Atoi(v[0]); err != nil || t.db < 0 {
			return nil, bad(fmt.Sprintf("db %q is not a database number", clip(v[0])))
		}
	}
	path = strings.TrimSuffix(path, "/")
	switch t.kind {
	case kindCluster:
		if path != "" {
			return nil, bad("a cluster has no database or master name: nothing goes after the hosts")
		}
		t.where = "cluster " + strings.Join(t.addrs, ",")
	case kindSentinel:
		if path == "" || strings.Contains(path, "/") {
			return nil, bad("the master's name goes after the sentinels, as /mymaster")
		}
		if t.master, err = url.PathUnescape(path); err != nil {
			return nil, bad("a bad escape in the master name")
		}
		t.where = fmt.Sprintf("master %s of sentinels %s", t.master, strings.Join(t.addrs, ","))
	}
	if strings.HasPrefix(strings.ToLower(scheme), "rediss") {
		host, _, _ := net.SplitHostPort(t.addrs[0])
		// The nodes' certificates are checked for the first host's
		// name, as a managed cluster's endpoint names them all.
		t.tls = &tls.Config{MinVersion: tls.VersionTLS12, ServerName: host}
	}
	return t, nil
}

// Redact returns a store URL without its password, for messages and logs.
func Redact(rawURL string) string {
	scheme, rest, ok := strings.Cut(rawURL, "://")
	if !ok {
		return rawURL
	}
	hosts, tail := rest, ""
	if i := strings.IndexAny(rest, "/?"); i >= 0 {
		hosts, tail = rest[:i], rest[i:]
	}
	i := strings.LastIndex(hosts, "@")
	if i < 0 {
		return rawURL
	}
	user, _, hasPass := strings.Cut(hosts[:i], ":")
	if hasPass {
		user += ":xxxxx"
	}
	return scheme + "://" + user + "@" + hosts[i+1:] + tail
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

// Addr is where Redis is: its host:port, or a cluster's nodes, or a
// Sentinel master's name and sentinels.
func (s *Store) Addr() string { return s.addr }

// key is the key of a session's (or an answer's) part: the id in braces
// is its hash tag, so that every key of a session hashes to one slot of a
// cluster and its scripts may touch them all.
func (s *Store) key(kind, id string) string { return s.prefix + kind + ":{" + id + "}" }

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

// pageKeys are the page budget's keys, one slot's: the kept answers in
// the order they came, each one's bytes and session, the bytes of all and
// the counter ordering the first.
func (s *Store) pageKeys() []string {
	p := s.prefix + "{pages}"
	return []string{p, p + "sizes", p + "bytes", p + "seq"}
}

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
		return fmt.Errorf("%w: Redis at %s answered with an error: %v", session.ErrUnavailable, s.addr, err) //nolint:errorlint // the cause is told, not wrapped: a store error is told by session.ErrUnavailable alone, never as a timeout or cancellation of the call
	}
	if cc, ok := s.rdb.(*redis.ClusterClient); ok {
		// A node that does not answer may have been replaced (its
		// replica promoted): the client learns of it only from a MOVED,
		// which a dead node never sends, or after 10 s. Ask the cluster
		// now, so that a retry finds the new master.
		cc.ReloadState(ctx)
	}
	return fmt.Errorf("%w: Redis at %s is unreachable: %v", session.ErrUnavailable, s.addr, err) //nolint:errorlint // the cause is told, not wrapped: a store error is told by session.ErrUnavailable alone, never as a timeout or cancellation of the call
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

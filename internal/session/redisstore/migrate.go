package redisstore

import (
	"context"
	"errors"
	"log/slog"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Earlier versions named a session's keys without a hash tag (P
// session:ID, P turns:ID, P answers:ID, P answer:A) and the page budget's
// P pages, P pagesizes, P pagebytes and P pageseq. On one server (or a
// Sentinel's master) Open renames them to this version's names; a
// cluster never held them, since those versions' scripts span slots.

// migrateScan is how many keys a SCAN asks for in one round trip.
const migrateScan = 1000

// migrateBudgetScript renames the old page budget's keys (KEYS[1..4]) to
// the new ones (KEYS[5..8]) unless the new budget exists already (a
// process of this version has counted answers): then the old keys are
// deleted, and their answers expire with their sessions uncounted.
var migrateBudgetScript = `
for i = 5, 8 do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
    return 0
  end
end
local n = 0
for i = 1, 4 do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    redis.call('RENAME', KEYS[i], KEYS[i + 4])
    n = n + 1
  end
end
return n`

// migrate renames the keys of earlier versions. It walks the keyspace
// with SCAN at every Open, so that the sessions that processes of an
// earlier version still running wrote meanwhile (a rolling upgrade) are
// renamed at the next start. RENAMENX keeps a key's TTL, and never
// overwrites a key of this version: a session that both versions wrote
// keeps this version's, and the old key expires.
func (s *Store) migrate(ctx context.Context) error {
	kinds := []string{"session:", "turns:", "answers:", "answer:"}
	pattern := globEscape(s.prefix) + "*"
	renamed := 0
	var cursor uint64
	for {
		keys, next, err := s.rdb.Scan(ctx, cursor, pattern, migrateScan).Result()
		var refused redis.Error
		if errors.As(err, &refused) && cursor == 0 {
			// A user whose ACL forbids SCAN: this version's keys work
			// all the same; an earlier version's stay where they are.
			slog.WarnContext(ctx, "session store: cannot look for the keys of an earlier version to rename", "redis", s.addr, "err", err)
			return nil
		}
		if err != nil {
			return err
		}
		p := s.rdb.Pipeline()
		n := 0
		for _, k := range keys {
			rest := strings.TrimPrefix(k, s.prefix)
			for _, kind := range kinds {
				id, ok := strings.CutPrefix(rest, kind)
				if ok && checkID(id) == nil {
					p.RenameNX(ctx, k, s.key(strings.TrimSuffix(kind, ":"), id))
					n++
				}
			}
		}
		if n > 0 {
			cmds, _ := p.Exec(ctx)
			for _, c := range cmds {
				ok, err := c.(*redis.BoolCmd).Result()
				if err != nil && !isNoSuchKey(err) {
					return err
				}
				if ok {
					renamed++
				}
			}
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	old := []string{s.prefix + "pages", s.prefix + "pagesizes", s.prefix + "pagebytes", s.prefix + "pageseq"}
	if err := s.rdb.Eval(ctx, migrateBudgetScript, append(old, s.pageKeys()...)).Err(); err != nil {
		return err
	}
	if renamed > 0 {
		slog.InfoContext(ctx, "session store: renamed the keys of an earlier version", "redis", s.addr, "keys", renamed)
	}
	return nil
}

// isNoSuchKey is RENAMENX's error for a key gone since SCAN listed it (it
// expired, or another process renamed it).
func isNoSuchKey(err error) bool { return strings.Contains(err.Error(), "no such key") }

// globEscape escapes the characters a SCAN pattern gives a meaning.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

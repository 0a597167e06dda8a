package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

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
	gone []redis.Z // entries whose record has gone
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
			z   redis.Z
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
			batch = append(batch, cand{best.buf[0].Member.(string), best.buf[0], best})
			best.buf = best.buf[1:]
		}
		if len(batch) == 0 {
			return recs, false, nil
		}
		size = listBatch
		ids := make([]string, len(batch))
		for i, c := range batch {
			ids[i] = c.id
		}
		vals, err := s.getRecords(ctx, ids)
		if err != nil {
			return nil, false, s.fail(ctx, err)
		}
		for i, v := range vals {
			c := batch[i]
			str, ok := v.(string)
			if !ok {
				c.src.gone = append(c.src.gone, c.z)
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
		vals, err := s.getRecords(ctx, ids)
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

// getRecords reads the records of ids in one pipeline (an MGET would
// span the slots of a cluster): a string each, or nil for those gone.
func (s *Store) getRecords(ctx context.Context, ids []string) ([]any, error) {
	p := s.rdb.Pipeline()
	cmds := make([]*redis.StringCmd, len(ids))
	for i, id := range ids {
		cmds[i] = p.Get(ctx, s.recordKey(id))
	}
	_, _ = p.Exec(ctx) // each command's error is its own, below
	vals := make([]any, len(ids))
	for i, c := range cmds {
		v, err := c.Result()
		switch {
		case err == nil:
			vals[i] = v
		case !errors.Is(err, redis.Nil):
			// A record that could not be read is not a record gone.
			return nil, err
		}
	}
	return vals, nil
}

// pruneScript removes from an index (KEYS[1]) the entries of expired
// sessions, ARGV id and score pairs, unless a Touch recreated one
// meanwhile: that changed its score.
var pruneScript = redis.NewScript(`
local n = 0
for i = 1, #ARGV, 2 do
  local sc = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if sc and tonumber(sc) == tonumber(ARGV[i+1]) then n = n + redis.call('ZREM', KEYS[1], ARGV[i]) end
end
return n`)

func (s *Store) prune(ctx context.Context, index string, gone []redis.Z) error {
	if len(gone) == 0 {
		return nil
	}
	args := make([]any, 0, 2*len(gone))
	for _, z := range gone {
		args = append(args, z.Member, strconv.FormatFloat(z.Score, 'f', -1, 64))
	}
	if err := pruneScript.Run(ctx, s.rdb, []string{index}, args...).Err(); err != nil {
		return s.fail(ctx, err)
	}
	return nil
}

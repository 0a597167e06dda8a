package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/manifest"
)

// The store keeps file search's manifests (manifest.Manifests) under the
// keys, for a manifest whose key hashes to H (the first 32 hex digits of
// its sha256):
//
//	P manifest:{H}       the record, a hash: key (the manifest's own),
//	                     store, used (Unix milliseconds)
//	P manifestfiles:{H}  its files, a hash: path → "HASH DOCUMENT"
//	P manifests          every manifest's H, a sorted set scored by use
//
// A manifest's two keys share the hash tag {H}, so that on a cluster one
// script reads the record and writes a file (PutFile's bound on the files
// is one atomic step, whoever puts at once), and manifests spread over
// the nodes. The index spans them: SetStore adds to it before it writes
// the record and Remove takes from it after it deletes the record, so
// that List, which skips an H without a record, misses no manifest. The
// keys do not expire: a manifest names its File Search store, which only
// its removal (file search's sweep, after its TTL) deletes.
//
// An H left in the index without a record (Redis failed between a
// Remove's two steps, or a SetStore's) is taken out by a List that finds
// it there with a use over orphanGrace old, so that an H whose SetStore
// is between its steps stays; the ZREM holds only while the H's score is
// the one List read, so that a SetStore meanwhile keeps its entry. At
// most maxOrphans go per List; the rest go at the next.
//
// Round trips: Get, PutFile and DeleteFile one each (Get's a MULTI of the
// record and the files), SetStore and Remove two, List two (three when it
// takes out orphans).

var _ manifest.Keeper = (*Store)(nil)

func manifestHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16])
}

func (s *Store) manifestKeys(h string) []string {
	return []string{s.key("manifest", h), s.key("manifestfiles", h)}
}

func (s *Store) manifestIndexKey() string { return s.prefix + "manifests" }

// setManifestScript sets a manifest's store and use time (KEYS as
// manifestKeys; ARGV: key, store, used, and "1" and the store expected
// for a ReplaceStore), dropping its files when the store changes: -1
// when the record is another key's (a hash collision), -2 when a
// ReplaceStore finds another store than expected.
var setManifestScript = redis.NewScript(`
local cur = redis.call('HMGET', KEYS[1], 'key', 'store')
if cur[1] and cur[1] ~= ARGV[1] then return -1 end
if ARGV[4] == '1' and (cur[2] or '') ~= ARGV[5] then return -2 end
if cur[2] ~= ARGV[2] then redis.call('DEL', KEYS[2]) end
redis.call('HSET', KEYS[1], 'key', ARGV[1], 'store', ARGV[2], 'used', ARGV[3])
return 1`)

// putManifestFileScript puts a file's entry (KEYS as manifestKeys; ARGV:
// key, path, entry, the bound on files): 0 when the manifest has no
// record, -1 when it is full and the path new.
var putManifestFileScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'key') ~= ARGV[1] then return 0 end
if redis.call('HEXISTS', KEYS[2], ARGV[2]) == 0 and redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[4]) then return -1 end
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
return 1`)

// removeManifestScript deletes a manifest (KEYS as manifestKeys; ARGV:
// key): 1 when it did, 0 when there was none, -1 when the record is
// another key's.
var removeManifestScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], 'key')
if not cur then redis.call('DEL', KEYS[2]) return 0 end
if cur ~= ARGV[1] then return -1 end
redis.call('DEL', KEYS[1], KEYS[2])
return 1`)

// pruneManifestIndexScript takes Hs out of the index (KEYS[1]; ARGV:
// pairs of H and the score it had when read) while their scores are
// unchanged: the number taken out.
var pruneManifestIndexScript = redis.NewScript(`
local n = 0
for i = 1, #ARGV, 2 do
  local cur = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if cur and tonumber(cur) == tonumber(ARGV[i+1]) then
    n = n + redis.call('ZREM', KEYS[1], ARGV[i])
  end
end
return n`)

const (
	// orphanGrace is how old an index entry without a record must be
	// (by its use time) before List takes it out: far over the time
	// between a SetStore's two steps.
	orphanGrace = 10 * time.Minute
	// maxOrphans bounds the entries one List takes out.
	maxOrphans = 1000
)

// Manifests implements manifest.Keeper.
func (s *Store) Manifests() manifest.Manifests { return manifests{s} }

// manifests is the store's manifest.Manifests: a session.Store cannot be
// one itself (both have a Get).
type manifests struct{ s *Store }

func collision(key string) error {
	return fmt.Errorf("session store: the file search manifest %q shares its hash with another's", key)
}

// Get implements manifest.Manifests: the record and the files in one
// MULTI.
func (m manifests) Get(ctx context.Context, key string) (manifest.Record, error) {
	rec := manifest.Record{Key: key, Files: map[string]manifest.Entry{}}
	if err := manifest.CheckKey(key); err != nil {
		return rec, err
	}
	keys := m.s.manifestKeys(manifestHash(key))
	p := m.s.rdb.TxPipeline()
	head := p.HMGet(ctx, keys[0], "key", "store", "used")
	files := p.HGetAll(ctx, keys[1])
	if _, err := p.Exec(ctx); err != nil {
		return rec, m.s.fail(ctx, err)
	}
	vals := head.Val()
	if k, _ := vals[0].(string); k != key {
		return rec, nil
	}
	rec.Store, _ = vals[1].(string)
	used, _ := vals[2].(string)
	ms, err := strconv.ParseInt(used, 10, 64)
	if err != nil {
		return manifest.Record{Key: key, Files: map[string]manifest.Entry{}}, m.corrupt(key, err)
	}
	rec.Used = time.UnixMilli(ms)
	fs := files.Val()
	rec.Files = make(map[string]manifest.Entry, len(fs))
	for path, v := range fs {
		hash, doc, ok := strings.Cut(v, " ")
		if !ok {
			return manifest.Record{Key: key, Files: map[string]manifest.Entry{}}, m.corrupt(key, fmt.Errorf("the entry of %q has no document", path))
		}
		rec.Files[path] = manifest.Entry{Hash: hash, Document: doc}
	}
	return rec, nil
}

// taken is ReplaceStore's refusal, naming the store the record has now.
func (m manifests) taken(ctx context.Context, key, old string) error {
	cur, _ := m.s.rdb.HGet(ctx, m.s.manifestKeys(manifestHash(key))[0], "store").Result()
	return manifest.TakenError(key, old, cur)
}

func (m manifests) corrupt(key string, err error) error {
	return fmt.Errorf("session store: the file search manifest %q in Redis at %s is corrupt: %w", key, m.s.addr, err)
}

// SetStore implements manifest.Manifests: the index, then the record.
func (m manifests) SetStore(ctx context.Context, key, store string, used time.Time) error {
	return m.set(ctx, key, store, used, false, "")
}

// ReplaceStore implements manifest.Manifests: SetStore's script, which
// checks the store it reads.
func (m manifests) ReplaceStore(ctx context.Context, key, old, store string, used time.Time) error {
	return m.set(ctx, key, store, used, true, old)
}

func (m manifests) set(ctx context.Context, key, store string, used time.Time, cas bool, old string) error {
	if err := manifest.CheckStore(key, store); err != nil {
		return err
	}
	h := manifestHash(key)
	if err := m.s.rdb.ZAdd(ctx, m.s.manifestIndexKey(), redis.Z{Score: float64(used.UnixMilli()), Member: h}).Err(); err != nil {
		return m.s.fail(ctx, err)
	}
	flag := "0"
	if cas {
		flag = "1"
	}
	n, err := setManifestScript.Run(ctx, m.s.rdb, m.s.manifestKeys(h), key, store, used.UnixMilli(), flag, old).Int64()
	if err != nil {
		return m.s.fail(ctx, err)
	}
	if n == -2 {
		return m.taken(ctx, key, old)
	}
	if n < 0 {
		return collision(key)
	}
	return nil
}

// PutFile implements manifest.Manifests: one script.
func (m manifests) PutFile(ctx context.Context, key, path string, e manifest.Entry) error {
	if err := manifest.CheckFile(key, path, e); err != nil {
		return err
	}
	n, err := putManifestFileScript.Run(ctx, m.s.rdb, m.s.manifestKeys(manifestHash(key)), key, path, e.Hash+" "+e.Document, manifest.MaxFiles).Int64()
	if err != nil {
		return m.s.fail(ctx, err)
	}
	if n < 0 {
		return manifest.FilesError()
	}
	return nil
}

// DeleteFile implements manifest.Manifests: one HDEL.
func (m manifests) DeleteFile(ctx context.Context, key, path string) error {
	if err := manifest.CheckPath(key, path); err != nil {
		return err
	}
	if err := m.s.rdb.HDel(ctx, m.s.manifestKeys(manifestHash(key))[1], path).Err(); err != nil {
		return m.s.fail(ctx, err)
	}
	return nil
}

// Remove implements manifest.Manifests: the record, then the index.
func (m manifests) Remove(ctx context.Context, key string) error {
	if err := manifest.CheckKey(key); err != nil {
		return err
	}
	h := manifestHash(key)
	n, err := removeManifestScript.Run(ctx, m.s.rdb, m.s.manifestKeys(h), key).Int64()
	if err != nil {
		return m.s.fail(ctx, err)
	}
	if n < 0 {
		return collision(key)
	}
	if err := m.s.rdb.ZRem(ctx, m.s.manifestIndexKey(), h).Err(); err != nil {
		return m.s.fail(ctx, err)
	}
	return nil
}

// List implements manifest.Manifests: the index, then the records in one
// pipeline, then the orphans' removal when there are any.
func (m manifests) List(ctx context.Context) ([]manifest.Record, error) {
	hs, err := m.s.rdb.ZRangeWithScores(ctx, m.s.manifestIndexKey(), 0, -1).Result()
	if err != nil {
		return nil, m.s.fail(ctx, err)
	}
	if len(hs) == 0 {
		return nil, nil
	}
	p := m.s.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(hs))
	for i, z := range hs {
		h, _ := z.Member.(string)
		cmds[i] = p.HMGet(ctx, m.s.manifestKeys(h)[0], "key", "store", "used")
	}
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, m.s.fail(ctx, err)
	}
	out := make([]manifest.Record, 0, len(hs))
	var orphans []any
	old := float64(time.Now().Add(-orphanGrace).UnixMilli())
	for i, c := range cmds {
		vals := c.Val()
		key, _ := vals[0].(string)
		if key == "" && hs[i].Score < old && len(orphans) < 2*maxOrphans {
			orphans = append(orphans, hs[i].Member, strconv.FormatInt(int64(hs[i].Score), 10))
		}
		if key == "" || manifestHash(key) != hs[i].Member {
			continue // removed, or not yet written
		}
		store, _ := vals[1].(string)
		used, _ := vals[2].(string)
		ms, err := strconv.ParseInt(used, 10, 64)
		if err != nil {
			return nil, m.corrupt(key, err)
		}
		out = append(out, manifest.Record{Key: key, Store: store, Used: time.UnixMilli(ms)})
	}
	if len(orphans) > 0 {
		// A failure leaves them to the next List; the records are read.
		_ = pruneManifestIndexScript.Run(ctx, m.s.rdb, []string{m.s.manifestIndexKey()}, orphans...).Err()
	}
	return out, nil
}

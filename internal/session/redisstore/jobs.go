package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
)

// The store keeps background jobs (jobs.Store) under the keys, for a job
// J and an owner O:
//
//	P {jobs}job:J       the job, a hash: v (its version), owner, data (JSON
//	                    of jobs.Job); expiring at the job's Expires
//	P {jobs}live        the live jobs' ids, a sorted set scored by expiry
//	P {jobs}live:O      owner O's live jobs, the same
//	P {jobs}byowner:O   all of owner O's jobs, the same, for ListJobs
//	P {jobs}resume:N:O:R  the id of owner O's job with resume handle R
//	                    (N is O's length), for FindJob; expiring with it
//
// All share the hash tag {jobs}, so that on a cluster they are one slot's
// and one script can count the live jobs and create one, or compare a
// job's version and write it, atomically: the limits hold and no update
// overwrites another's even with replicas racing. The price is that all
// jobs live on one node of a cluster: the limits bound the live ones,
// the TTL and the rate of new ones the finished (each at most a little
// over jobs.MaxResultBytes+MaxPartialBytes). The sets forget expired ids
// at the next create of their owner; a set itself expires with its last
// job, so that no key outlives the jobs.
//
// Expiry is Redis's: PEXPIREAT at the job's Expires, in this process's
// clock (replicas' clocks should agree within the poll interval). A
// waiter on another replica sees a change at its next poll: one HMGET of
// two fields every jobs.PollEvery; a waiter of this process at once.

var _ jobs.Store = (*Store)(nil)

func (s *Store) jobKey(id string) string          { return s.prefix + "{jobs}job:" + id }
func (s *Store) jobLiveKey() string               { return s.prefix + "{jobs}live" }
func (s *Store) jobOwnerLiveKey(o string) string  { return s.prefix + "{jobs}live:" + o }
func (s *Store) jobOwnerIndexKey(o string) string { return s.prefix + "{jobs}byowner:" + o }

func (s *Store) jobResumeKey(o, r string) string {
	return s.prefix + "{jobs}resume:" + strconv.Itoa(len(o)) + ":" + o + ":" + r
}

// jobKeys are the keys a job's write touches: its hash, the sets and,
// when it has a resume handle, its entry in the index of handles.
func (s *Store) jobKeys(j jobs.Job) []string {
	keys := []string{s.jobKey(j.ID), s.jobLiveKey(), s.jobOwnerLiveKey(j.Owner), s.jobOwnerIndexKey(j.Owner)}
	if j.Resume != "" {
		keys = append(keys, s.jobResumeKey(j.Owner, j.Resume))
	}
	return keys
}

// jobIndexLua keeps job id expiring at exp in the sets: live (KEYS[2],
// [3]) when live is "1", and its owner's index (KEYS[4]); each set
// expires with its latest job, so that nothing outlives the jobs. A job
// with a resume handle has its entry (KEYS[5]), expiring with it.
const jobIndexLua = `
local function index(id, exp, live)
  local sets = {KEYS[4]}
  if live == '1' then
    sets[2], sets[3] = KEYS[2], KEYS[3]
  else
    redis.call('ZREM', KEYS[2], id)
    redis.call('ZREM', KEYS[3], id)
  end
  for _, k in ipairs(sets) do
    redis.call('ZADD', k, exp, id)
    redis.call('PEXPIREAT', k, exp, 'NX')
    redis.call('PEXPIREAT', k, exp, 'GT')
  end
  if KEYS[5] then
    redis.call('SET', KEYS[5], id)
    redis.call('PEXPIREAT', KEYS[5], exp)
  end
end
`

// createJobScript stores a new job (KEYS as jobKeys; ARGV: id, expires,
// live, now, per-owner limit, total limit, owner, data) unless its id is
// in use (-3) or, when live, its owner (-1) or all (-2) have as many live
// jobs as the limit allows.
var createJobScript = redis.NewScript(jobIndexLua + `
local now = ARGV[4]
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now)
if redis.call('EXISTS', KEYS[1]) == 1 then return -3 end
if ARGV[3] == '1' then
  if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[5]) then return -1 end
  if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[6]) then return -2 end
end
redis.call('HSET', KEYS[1], 'v', 1, 'owner', ARGV[7], 'data', ARGV[8])
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
index(ARGV[1], ARGV[2], ARGV[3])
return 1`)

// updateJobScript writes a job over the version it was read at (KEYS as
// jobKeys; ARGV: id, expires, live, version read, owner, data): -1 when
// there is no such job of that owner, -2 when its version moved on, else
// the new version.
var updateJobScript = redis.NewScript(jobIndexLua + `
local cur = redis.call('HMGET', KEYS[1], 'v', 'owner')
if not cur[1] or cur[2] ~= ARGV[5] then return -1 end
if cur[1] ~= ARGV[4] then return -2 end
local v = tonumber(ARGV[4]) + 1
redis.call('HSET', KEYS[1], 'v', v, 'data', ARGV[6])
redis.call('PEXPIREAT', KEYS[1], ARGV[2])
index(ARGV[1], ARGV[2], ARGV[3])
return v`)

func liveArg(j jobs.Job) string {
	if j.Status.Live() {
		return "1"
	}
	return "0"
}

// CreateJob implements jobs.Store: one script, one round trip.
func (s *Store) CreateJob(ctx context.Context, j jobs.Job, lim jobs.Limits) (jobs.Job, error) {
	if err := jobs.CheckNew(j); err != nil {
		return jobs.Job{}, err
	}
	lim = lim.WithDefaults()
	j.Version = 1
	data, err := json.Marshal(j)
	if err != nil {
		return jobs.Job{}, fmt.Errorf("session store: %w", err)
	}
	n, err := createJobScript.Run(ctx, s.rdb, s.jobKeys(j), j.ID, j.Expires.UnixMilli(), liveArg(j),
		time.Now().UnixMilli(), lim.PerOwner, lim.Total, j.Owner, data).Int64()
	if err != nil {
		return jobs.Job{}, s.fail(ctx, err)
	}
	switch n {
	case -1:
		return jobs.Job{}, jobs.OwnerLimitError(lim)
	case -2:
		return jobs.Job{}, jobs.TotalLimitError(lim)
	case -3:
		return jobs.Job{}, fmt.Errorf("job %s: the id is in use", j.ID)
	}
	return j, nil
}

// GetJob implements jobs.Store: one HMGET.
func (s *Store) GetJob(ctx context.Context, owner, id string) (jobs.Job, bool, error) {
	if err := jobs.CheckID(id); err != nil {
		return jobs.Job{}, false, err
	}
	vals, err := s.rdb.HMGet(ctx, s.jobKey(id), "v", "owner", "data").Result()
	if err != nil {
		return jobs.Job{}, false, s.fail(ctx, err)
	}
	return s.decodeJob(id, owner, vals)
}

// decodeJob reads a job's hash fields v, owner and data: ok is false
// when there is none of owner's.
func (s *Store) decodeJob(id, owner string, vals []any) (jobs.Job, bool, error) {
	v, _ := vals[0].(string)
	o, _ := vals[1].(string)
	data, _ := vals[2].(string)
	if v == "" || o != owner || vals[1] == nil {
		return jobs.Job{}, false, nil
	}
	var j jobs.Job
	var err error
	if err = json.Unmarshal([]byte(data), &j); err == nil {
		j.Version, err = strconv.ParseInt(v, 10, 64)
	}
	if err != nil {
		return jobs.Job{}, false, fmt.Errorf("session store: job %s in Redis at %s is corrupt: %w", id, s.addr, err)
	}
	return j, true, nil
}

// UpdateJob implements jobs.Store: one script, one round trip.
func (s *Store) UpdateJob(ctx context.Context, j jobs.Job) (jobs.Job, error) {
	if err := j.Check(); err != nil {
		return jobs.Job{}, err
	}
	read := j.Version
	j.Version++
	data, err := json.Marshal(j)
	if err != nil {
		return jobs.Job{}, fmt.Errorf("session store: %w", err)
	}
	n, err := updateJobScript.Run(ctx, s.rdb, s.jobKeys(j), j.ID, j.Expires.UnixMilli(), liveArg(j),
		read, j.Owner, data).Int64()
	if err != nil {
		return jobs.Job{}, s.fail(ctx, err)
	}
	switch n {
	case -1:
		return jobs.Job{}, jobs.NotFound(j.ID)
	case -2:
		return jobs.Job{}, fmt.Errorf("job %s: not at version %d: %w", j.ID, read, jobs.ErrConflict)
	}
	s.jobWake.Notify(j.ID)
	return j, nil
}

// ListJobs implements jobs.Store: the owner's index, then its jobs in one
// pipeline (two round trips).
func (s *Store) ListJobs(ctx context.Context, owner string, limit int) ([]jobs.Job, error) {
	if limit < 0 {
		return nil, fmt.Errorf("session store: a limit of %d is negative", limit)
	}
	if limit == 0 {
		return nil, nil
	}
	ids, err := s.rdb.ZRangeArgs(ctx, redis.ZRangeArgs{
		Key: s.jobOwnerIndexKey(owner), ByScore: true, Rev: true,
		// With Rev, ZRANGE takes the high end first.
		Start: "+inf", Stop: "(" + strconv.FormatInt(time.Now().UnixMilli(), 10),
		Count: int64(limit),
	}).Result()
	if err != nil {
		return nil, s.fail(ctx, err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	p := s.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(ids))
	for i, id := range ids {
		cmds[i] = p.HMGet(ctx, s.jobKey(id), "v", "owner", "data")
	}
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, s.fail(ctx, err)
	}
	out := make([]jobs.Job, 0, len(ids))
	for i, c := range cmds {
		j, ok, err := s.decodeJob(ids[i], owner, c.Val())
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, j)
		}
	}
	return out, nil
}

// FindJob implements jobs.Store: the entry of the handle, then the job
// (two round trips).
func (s *Store) FindJob(ctx context.Context, owner, resume string) (jobs.Job, bool, error) {
	if resume == "" {
		return jobs.Job{}, false, nil
	}
	id, err := s.rdb.Get(ctx, s.jobResumeKey(owner, resume)).Result()
	if errors.Is(err, redis.Nil) {
		return jobs.Job{}, false, nil
	}
	if err != nil {
		return jobs.Job{}, false, s.fail(ctx, err)
	}
	if jobs.CheckID(id) != nil {
		return jobs.Job{}, false, fmt.Errorf("session store: the job of a resume handle in Redis at %s is corrupt: %q", s.addr, id)
	}
	j, ok, err := s.GetJob(ctx, owner, id)
	if err != nil || !ok || j.Resume != resume {
		return jobs.Job{}, false, err
	}
	return j, true, nil
}

// WaitJob implements jobs.Store, asking for the job's version every
// jobs.PollEvery for the changes of other replicas.
func (s *Store) WaitJob(ctx context.Context, owner, id string, version int64, max time.Duration) (jobs.Job, bool, error) {
	vers := func(ctx context.Context) (int64, bool, error) {
		vals, err := s.rdb.HMGet(ctx, s.jobKey(id), "v", "owner").Result()
		if err != nil {
			return 0, false, s.fail(ctx, err)
		}
		v, _ := vals[0].(string)
		o, _ := vals[1].(string)
		if v == "" || o != owner || vals[1] == nil {
			return 0, false, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, false, fmt.Errorf("session store: job %s in Redis at %s is corrupt: %w", id, s.addr, err)
		}
		return n, true, nil
	}
	get := func(ctx context.Context) (jobs.Job, bool, error) { return s.GetJob(ctx, owner, id) }
	return jobs.Wait(ctx, &s.jobWake, id, version, max, jobs.PollEvery, vers, get)
}

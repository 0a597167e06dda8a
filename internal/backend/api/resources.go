package api

import (
	"context"
	"sync"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// Resources the Gemini API keeps for a conversation (files uploaded
// through the Files API, context caches): each
// is owned by one session of this server, reused by its later turns, and
// deleted when the session ends, that is when it is deleted or expires in
// the session store, or when the server stops. The API deletes what this
// server could not (a server killed) by itself: files after 48 hours,
// caches at their expiry.
//
// The list lives in this process. A session continued in another process
// (a replica, or this one restarted) finds its resources again or makes
// them anew, as the caller decides (a file upload checks that the file is
// still there, and uploads it again if not).

// resourceSweepEvery is the least time between two sweeps for the
// resources of sessions that ended; a sweep runs at the start of a turn.
const resourceSweepEvery = 5 * time.Minute

// resourceGrace keeps a resource made less than this long ago from a
// sweep: its session's first turn may not be recorded yet.
const resourceGrace = 10 * time.Minute

// resourceDeleteTimeout bounds the deletions of one sweep, or of Close.
const resourceDeleteTimeout = 30 * time.Second

// resource is one thing the API keeps for a session.
type resource struct {
	kind    string // "file" or "cache"
	name    string // the API's name of it ("files/abc", "cachedContents/abc")
	created time.Time
	// checked is when the API last said it is there.
	checked time.Time
	value   any // what the owner needs of it (a *genai.File, a *cacheEntry)
	// del deletes it at the API.
	del func(ctx context.Context) error
}

// resources are the resources of this process's sessions. Its methods are
// safe for concurrent use.
type resources struct {
	mu        sync.Mutex
	bySession map[string]map[string]*resource // session id → key → resource
	lastSweep time.Time
	sweeping  bool
	wg        sync.WaitGroup
}

// get returns session id's resource under key.
func (rs *resources) get(id, key string) *resource {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.bySession[id][key]
}

// find returns the resource under key of any session, and its session.
func (rs *resources) find(key string) (string, *resource) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for id, m := range rs.bySession {
		if r := m[key]; r != nil {
			return id, r
		}
	}
	return "", nil
}

// touch notes that the API said session id's resource under key is there;
// it says whether there is one.
func (rs *resources) touch(id, key string) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	r := rs.bySession[id][key]
	if r != nil {
		r.checked = time.Now()
	}
	return r != nil
}

// put records r as session id's resource under key, replacing any.
func (rs *resources) put(id, key string, r *resource) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.bySession == nil {
		rs.bySession = map[string]map[string]*resource{}
	}
	if rs.bySession[id] == nil {
		rs.bySession[id] = map[string]*resource{}
	}
	rs.bySession[id][key] = r
}

// drop forgets session id's resource under key (it is gone at the API).
func (rs *resources) drop(id, key string) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	delete(rs.bySession[id], key)
	if len(rs.bySession[id]) == 0 {
		delete(rs.bySession, id)
	}
}

// maybeSweep starts a sweep in the background when the last one is
// resourceSweepEvery old. Close waits for it.
func (rs *resources) maybeSweep(alive func(ctx context.Context, id string) (bool, error), onErr func(name string, err error)) {
	rs.mu.Lock()
	if rs.sweeping || len(rs.bySession) == 0 || time.Since(rs.lastSweep) < resourceSweepEvery {
		rs.mu.Unlock()
		return
	}
	rs.sweeping, rs.lastSweep = true, time.Now()
	rs.wg.Add(1)
	rs.mu.Unlock()
	go func() {
		defer rs.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), resourceDeleteTimeout)
		defer cancel()
		rs.sweep(ctx, alive, time.Now().Add(-resourceGrace), onErr)
		rs.mu.Lock()
		rs.sweeping = false
		rs.mu.Unlock()
	}()
}

// sweep deletes the resources of the sessions that alive says ended,
// made before before (a session's first turn is recorded only once it
// is answered). It returns how many it deleted.
func (rs *resources) sweep(ctx context.Context, alive func(ctx context.Context, id string) (bool, error), before time.Time, onErr func(name string, err error)) int {
	rs.mu.Lock()
	ids := make([]string, 0, len(rs.bySession))
	for id := range rs.bySession {
		ids = append(ids, id)
	}
	rs.mu.Unlock()
	n := 0
	for _, id := range ids {
		ok, err := alive(ctx, id)
		if err != nil || ok {
			continue
		}
		n += rs.deleteSession(ctx, id, before, onErr)
	}
	return n
}

// deleteSession deletes session id's resources made before before and
// returns how many.
func (rs *resources) deleteSession(ctx context.Context, id string, before time.Time, onErr func(name string, err error)) int {
	rs.mu.Lock()
	var doomed []*resource
	for key, r := range rs.bySession[id] {
		if r.created.Before(before) {
			doomed = append(doomed, r)
			delete(rs.bySession[id], key)
		}
	}
	if len(rs.bySession[id]) == 0 {
		delete(rs.bySession, id)
	}
	rs.mu.Unlock()
	for _, r := range doomed {
		if err := r.del(ctx); err != nil && onErr != nil {
			onErr(r.name, err)
		}
	}
	return len(doomed)
}

// close waits for a sweep under way, then deletes every resource.
func (rs *resources) close(onErr func(name string, err error)) {
	rs.wg.Wait()
	rs.mu.Lock()
	ids := make([]string, 0, len(rs.bySession))
	for id := range rs.bySession {
		ids = append(ids, id)
	}
	rs.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), resourceDeleteTimeout)
	defer cancel()
	for _, id := range ids {
		rs.deleteSession(ctx, id, time.Now().Add(time.Hour), onErr)
	}
}

// alive says whether session id still exists in the store (it is deleted
// or expired otherwise), for the sweep of its resources.
func (b *Backend) alive(ctx context.Context, id string) (bool, error) {
	if g, ok := b.hist.(interface {
		Get(context.Context, string) (session.Record, bool, error)
	}); ok {
		_, ok, err := g.Get(ctx, id)
		return ok, err
	}
	_, ok, err := b.hist.LoadTurns(ctx, id)
	return ok, err
}

// resourceError logs a resource of the API that could not be deleted; the
// API deletes it by itself in time (files 48 hours after their upload).
func (b *Backend) resourceError(name string, err error) {
	b.log.Warn("gemini api: a resource of an ended session could not be deleted; the API drops it in time", "name", name, "err", err)
}

type nopObserver struct{}

func (nopObserver) Queued(int)      {}
func (nopObserver) Started()        {}
func (nopObserver) Activity(string) {}

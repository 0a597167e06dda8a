// Package memstore is a session.Store that keeps everything in the
// process's memory: sessions end with the process. It serves unit tests
// and `--store memory:`, for a server whose conversations need not outlive
// it (a throwaway container, a demo). It honours the whole contract of
// session.Store: TTL, the budget for answer pages, and leases, whose
// waiters are woken by the release without polling.
//
// A lease here needs no expiry: its holder lives in this process, and a
// holder that dies takes the whole store with it. Options.LeaseTTL is
// therefore unused.
package memstore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/manifest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// Store is an in-memory session.Store. It is safe for concurrent use.
type Store struct {
	ttl    time.Duration
	budget int

	mu       sync.Mutex
	closed   bool
	sessions map[string]*entry
	answers  map[string]*answer
	order    []string // answer ids, oldest first, for the budget
	bytes    int      // of all kept pages
	leases   map[string]*lease
	swept    time.Time

	jobs jobTable // the background jobs (jobs.go), under a lock of their own

	manifests manifest.Memory // file search's manifests (manifests.go), under a lock of their own
}

// entry is one session: its record (once a turn was touched), its turns
// and when it expires.
type entry struct {
	rec     session.Record
	hasRec  bool
	turns   []json.RawMessage
	expires time.Time
}

type answer struct {
	a       session.PagedAnswer
	bytes   int
	expires time.Time // for an answer whose session the store does not know
}

// lease is the lease of one session id: a one-slot channel that its
// holder fills, so that waiters block on sending until the holder empties
// it. refs counts holders and waiters, so that the map forgets ids no one
// uses.
type lease struct {
	slot chan struct{}
	refs int
	// held are the releases of the current holder, for Close.
	held *holder
}

type holder struct{ once sync.Once }

var _ session.Store = (*Store)(nil)

// errClosed is what every method returns once the store is closed.
var errClosed = fmt.Errorf("memory session store: closed: %w", session.ErrUnavailable)

// New returns an empty store with opts (zero fields take session's
// defaults).
func New(opts session.Options) *Store {
	opts = opts.WithDefaults()
	return &Store{
		ttl:      opts.TTL,
		budget:   opts.MaxPagedBytes,
		sessions: map[string]*entry{},
		answers:  map[string]*answer{},
		leases:   map[string]*lease{},
	}
}

// checkID refuses anything but a lower-case UUID, as every store does.
func checkID(id string) error {
	if !session.IsUUID(id) || strings.ToLower(id) != id {
		return fmt.Errorf("memory session store: invalid session id %q: a lower-case UUID is expected", id)
	}
	return nil
}

// live returns session id's entry when it has not expired; s.mu must be
// held.
func (s *Store) live(id string, now time.Time) (*entry, bool) {
	e, ok := s.sessions[id]
	if !ok || !now.Before(e.expires) {
		return nil, false
	}
	return e, true
}

// sweep forgets expired sessions and answers, at most once per tenth of
// the TTL, so that a long-running server does not grow without bound;
// s.mu must be held. Lookups check expiry themselves, so sweeping late
// shows nothing expired.
func (s *Store) sweep(now time.Time) {
	if now.Sub(s.swept) < s.ttl/10 {
		return
	}
	s.swept = now
	for id, e := range s.sessions {
		if !now.Before(e.expires) {
			delete(s.sessions, id)
		}
	}
	for id, a := range s.answers {
		if !s.answerLive(a, now) {
			s.dropAnswer(id)
		}
	}
}

// Get implements session.Store.
func (s *Store) Get(_ context.Context, id string) (session.Record, bool, error) {
	if err := checkID(id); err != nil {
		return session.Record{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return session.Record{}, false, errClosed
	}
	e, ok := s.live(id, time.Now())
	if !ok || !e.hasRec {
		return session.Record{}, false, nil
	}
	return e.rec, true, nil
}

// Touch implements session.Store.
func (s *Store) Touch(_ context.Context, id string, t session.Turn, now time.Time) (session.Record, error) {
	if err := checkID(id); err != nil {
		return session.Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return session.Record{}, errClosed
	}
	clock := time.Now()
	s.sweep(clock)
	e, ok := s.live(id, clock)
	if !ok {
		e = &entry{}
		s.sessions[id] = e
	}
	e.rec = session.Apply(e.rec, e.hasRec, id, t, now)
	e.hasRec = true
	e.expires = clock.Add(s.ttl)
	return e.rec, nil
}

// List implements session.Store: a scan of the sessions in memory, which
// the memory store keeps few of.
func (s *Store) List(_ context.Context, f session.Filter) ([]session.Record, bool, error) {
	if err := f.Check(); err != nil {
		return nil, false, fmt.Errorf("memory %w", err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, false, errClosed
	}
	now := time.Now()
	var recs []session.Record
	for _, e := range s.sessions {
		if e.hasRec && now.Before(e.expires) && f.Match(e.rec) {
			recs = append(recs, e.rec)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(recs, func(a, b session.Record) int {
		if c := b.Updated.Compare(a.Updated); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if f.Offset >= len(recs) {
		return nil, false, nil
	}
	recs = recs[f.Offset:]
	more := len(recs) > f.Limit
	if more {
		recs = recs[:f.Limit]
	}
	return slices.Clone(recs), more, nil
}

// Delete implements session.Store.
func (s *Store) Delete(_ context.Context, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	delete(s.sessions, id)
	for aid, a := range s.answers {
		if a.a.SessionID == id {
			s.dropAnswer(aid)
		}
	}
	return nil
}

// LoadTurns implements session.Store.
func (s *Store) LoadTurns(_ context.Context, id string) ([]json.RawMessage, bool, error) {
	if err := checkID(id); err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, false, errClosed
	}
	e, ok := s.live(id, time.Now())
	if !ok || len(e.turns) == 0 {
		return nil, false, nil
	}
	// The turns are never changed in place, so sharing them is safe; the
	// slice is the caller's to append to.
	return slices.Clone(e.turns), true, nil
}

// AppendTurn implements session.Store.
func (s *Store) AppendTurn(_ context.Context, id string, turn json.RawMessage) error {
	if err := checkID(id); err != nil {
		return err
	}
	var b bytes.Buffer
	if err := json.Compact(&b, turn); err != nil {
		return fmt.Errorf("memory session store: a turn must be JSON: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	now := time.Now()
	s.sweep(now)
	e, ok := s.live(id, now)
	if !ok {
		// The API backend records a new conversation's first turn before
		// the tools touch its record.
		e = &entry{}
		s.sessions[id] = e
	}
	e.turns = append(e.turns, json.RawMessage(b.Bytes()))
	e.expires = now.Add(s.ttl)
	return nil
}

// PutAnswer implements session.Store. An answer larger than the whole
// budget keeps its first pages only (at least one), and counts the rest
// in Dropped.
func (s *Store) PutAnswer(_ context.Context, a session.PagedAnswer) error {
	if err := checkID(a.ID); err != nil {
		return fmt.Errorf("answer id: %w", err)
	}
	if a.SessionID != "" {
		if err := checkID(a.SessionID); err != nil {
			return fmt.Errorf("answer's session: %w", err)
		}
	}
	if len(a.Pages) == 0 {
		return errors.New("memory session store: an answer needs at least one page")
	}
	a, n := a.Fit(s.budget)
	a.Pages = slices.Clone(a.Pages)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	now := time.Now()
	s.sweep(now)
	if _, ok := s.answers[a.ID]; ok {
		s.dropAnswer(a.ID)
	}
	for len(s.order) > 0 && s.bytes+n > s.budget {
		s.dropAnswer(s.order[0])
	}
	s.answers[a.ID] = &answer{a: a, bytes: n, expires: now.Add(s.ttl)}
	s.order = append(s.order, a.ID)
	s.bytes += n
	return nil
}

// dropAnswer forgets answer id; s.mu must be held.
func (s *Store) dropAnswer(id string) {
	a, ok := s.answers[id]
	if !ok {
		return
	}
	delete(s.answers, id)
	s.bytes -= a.bytes
	if i := slices.Index(s.order, id); i >= 0 {
		s.order = slices.Delete(s.order, i, i+1)
	}
}

// answerLive reports whether a has not expired: an answer of a session
// the store knows lives as long as the session, any other one for the TTL
// from its creation; s.mu must be held.
func (s *Store) answerLive(a *answer, now time.Time) bool {
	if a.a.SessionID != "" {
		if e, ok := s.sessions[a.a.SessionID]; ok {
			return now.Before(e.expires)
		}
	}
	return now.Before(a.expires)
}

// GetAnswer implements session.Store.
func (s *Store) GetAnswer(_ context.Context, id string) (session.PagedAnswer, bool, error) {
	if err := checkID(id); err != nil {
		return session.PagedAnswer{}, false, fmt.Errorf("answer id: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return session.PagedAnswer{}, false, errClosed
	}
	a, ok := s.answers[id]
	if !ok || !s.answerLive(a, time.Now()) {
		return session.PagedAnswer{}, false, nil
	}
	out := a.a
	out.Pages = slices.Clone(a.a.Pages)
	return out, true, nil
}

// Lease implements session.Store.
func (s *Store) Lease(ctx context.Context, id string) (func(), error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errClosed
	}
	l, ok := s.leases[id]
	if !ok {
		l = &lease{slot: make(chan struct{}, 1)}
		s.leases[id] = l
	}
	l.refs++
	s.mu.Unlock()

	select {
	case l.slot <- struct{}{}:
	case <-ctx.Done():
		s.mu.Lock()
		s.unref(id, l)
		s.mu.Unlock()
		return nil, ctx.Err()
	}
	s.mu.Lock()
	if s.closed {
		// Close ran while this caller waited: it holds nothing.
		<-l.slot
		s.unref(id, l)
		s.mu.Unlock()
		return nil, errClosed
	}
	h := &holder{}
	l.held = h
	s.mu.Unlock()
	return func() { s.release(id, l, h) }, nil
}

// release gives back the lease h holds, once.
func (s *Store) release(id string, l *lease, h *holder) {
	h.once.Do(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if l.held == h {
			l.held = nil
		}
		<-l.slot
		s.unref(id, l)
	})
}

// unref drops one use of l, forgetting it when no one uses it; s.mu must
// be held.
func (s *Store) unref(id string, l *lease) {
	l.refs--
	if l.refs == 0 {
		delete(s.leases, id)
	}
}

// Close implements session.Store: it gives back the leases still held and
// forgets everything. Waiting Lease calls return an error.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	type held struct {
		id string
		l  *lease
		h  *holder
	}
	var hs []held
	for id, l := range s.leases {
		if l.held != nil {
			hs = append(hs, held{id, l, l.held})
		}
	}
	s.sessions, s.answers, s.order, s.bytes = map[string]*entry{}, map[string]*answer{}, nil, 0
	s.mu.Unlock()
	for _, x := range hs {
		s.release(x.id, x.l, x.h)
	}
	return nil
}

// Package storetest is the conformance suite of session.Store: every
// implementation runs it from its own tests, so that the embedded store and
// Redis keep the same promises.
//
// The suite never relies on the machine's speed. It waits on events
// (channels, a condition polled until a generous deadline) and, where
// time is the subject (TTL, lease renewal), asserts only what must hold
// whatever the delays: a session must be present when it is checked within
// its TTL of its last turn, and gone eventually afterwards.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// deadline bounds every wait for an event that must come: a failure guard
// only, far longer than any healthy run needs.
const deadline = 30 * time.Second

// Run runs the conformance suite against the stores open returns. Each call
// of open must return a new, empty store opened with opts (the suite sets
// TTL and LeaseTTL, and MaxPagedBytes where it matters); the suite closes
// every store it opens.
func Run(t *testing.T, open func(t *testing.T, opts session.Options) session.Store) {
	c := &conformance{open: open}
	t.Run("TouchAndGet", c.touchAndGet)
	t.Run("ConcurrentTouch", c.concurrentTouch)
	t.Run("InvalidIDs", c.invalidIDs)
	t.Run("ListAndLatest", c.listAndLatest)
	t.Run("ListFilters", c.listFilters)
	t.Run("ListExpired", c.listExpired)
	t.Run("Delete", c.delete)
	t.Run("Turns", c.turns)
	t.Run("ConcurrentAppends", c.concurrentAppends)
	t.Run("Answers", c.answers)
	t.Run("AnswerBudget", c.answerBudget)
	t.Run("TTL", c.ttl)
	t.Run("AppendTurnRestartsTTL", c.appendRestartsTTL)
	t.Run("LeaseWaitsForRelease", c.leaseWaits)
	t.Run("LeasesOfOtherSessions", c.leaseOtherIDs)
	t.Run("LeaseCancelled", c.leaseCancelled)
	t.Run("LeaseReleaseTwice", c.leaseReleaseTwice)
	t.Run("LeaseRenewed", c.leaseRenewed)
	t.Run("LeaseClose", c.leaseClose)
}

type conformance struct {
	open func(t *testing.T, opts session.Options) session.Store
}

// defaults are the options of the tests that do not need others.
var defaults = session.Options{TTL: time.Hour, LeaseTTL: 5 * time.Second}

// store opens a store that is closed when the test ends.
func (c *conformance) store(t *testing.T, opts session.Options) session.Store {
	t.Helper()
	s := c.open(t, opts)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// Ids used throughout: lower-case UUIDs, as the store requires.
const (
	idA = "0b1c2d3e-4f50-4a6b-8c7d-8e9fa0b1c2d3"
	idB = "1c2d3e4f-5061-4b7c-9d8e-9fa0b1c2d3e4"
	idC = "2d3e4f50-6172-4c8d-ae9f-a0b1c2d3e4f5"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	t.Cleanup(cancel)
	return ctx
}

func (c *conformance) touchAndGet(t *testing.T) {
	s, ctx := c.store(t, defaults), ctxT(t)
	if _, ok, err := s.Get(ctx, idA); ok || err != nil {
		t.Fatalf("Get of a session never recorded: ok %v, err %v", ok, err)
	}
	t1 := time.Date(2026, 11, 22, 10, 0, 0, 123456789, time.UTC)
	first := session.Turn{Cwd: "/a", Model: "m1", Owner: "owner1", Client: "mcp:one", Backend: "api",
		Title: "How do I", Host: "host1", SystemPrompt: "Be brief."}
	r, err := s.Touch(ctx, idA, first, t1)
	if err != nil {
		t.Fatal(err)
	}
	want := session.Record{ID: idA, Cwd: "/a", Model: "m1", Created: t1, Updated: t1, Turns: 1, Owner: "owner1",
		LastClient: "mcp:one", Backend: "api", Title: "How do I", Host: "host1", SystemPrompt: "Be brief."}
	checkRecord(t, "Touch's first record", r, want)
	got, ok, err := s.Get(ctx, idA)
	if !ok || err != nil {
		t.Fatalf("Get after Touch: ok %v, err %v", ok, err)
	}
	checkRecord(t, "Get after the first Touch", got, want)

	// A later turn changes what a turn may change and keeps the rest from
	// the first turn; a turn without a model keeps the last one.
	t2 := t1.Add(time.Minute)
	later := session.Turn{Cwd: "/b", Owner: "owner2", Client: "token:two", Backend: "cli",
		Title: "Other words", Host: "host2", SystemPrompt: "Be long."}
	r, err = s.Touch(ctx, idA, later, t2)
	if err != nil {
		t.Fatal(err)
	}
	want.Cwd, want.LastClient, want.Updated, want.Turns = "/b", "token:two", t2, 2
	checkRecord(t, "Touch's second record", r, want)
	got, _, err = s.Get(ctx, idA)
	if err != nil {
		t.Fatal(err)
	}
	checkRecord(t, "Get after the second Touch", got, want)

	t3 := t2.Add(time.Minute)
	later.Model = "m3"
	if r, err = s.Touch(ctx, idA, later, t3); err != nil {
		t.Fatal(err)
	}
	want.Model, want.Updated, want.Turns = "m3", t3, 3
	checkRecord(t, "Touch's third record", r, want)
	got, _, err = s.Get(ctx, idA)
	if err != nil {
		t.Fatal(err)
	}
	checkRecord(t, "Get after the third Touch", got, want)

	// Other sessions are untouched.
	if _, ok, err := s.Get(ctx, idB); ok || err != nil {
		t.Fatalf("Get of another session: ok %v, err %v", ok, err)
	}
}

func checkRecord(t *testing.T, what string, got, want session.Record) {
	t.Helper()
	if !got.Created.Equal(want.Created) || !got.Updated.Equal(want.Updated) {
		t.Errorf("%s: created %v updated %v, want %v and %v", what, got.Created, got.Updated, want.Created, want.Updated)
	}
	got.Created, got.Updated, want.Created, want.Updated = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	if got != want {
		t.Errorf("%s:\n got %+v\nwant %+v", what, got, want)
	}
}

func (c *conformance) concurrentTouch(t *testing.T) {
	s, ctx := c.store(t, defaults), ctxT(t)
	const workers, each = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				now := time.Now()
				if _, err := s.Touch(ctx, idA, session.Turn{Cwd: "/a", Client: fmt.Sprintf("mcp:%d-%d", w, i)}, now); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	r, ok, err := s.Get(ctx, idA)
	if !ok || err != nil {
		t.Fatalf("Get: ok %v, err %v", ok, err)
	}
	if r.Turns != workers*each {
		t.Fatalf("%d concurrent touches counted %d turns", workers*each, r.Turns)
	}
}

func (c *conformance) invalidIDs(t *testing.T) {
	s, ctx := c.store(t, defaults), ctxT(t)
	bad := []string{strings.ToUpper(idA), "not-a-uuid", "../x", "", idA + "/../" + idB, " " + idA}
	turn := json.RawMessage(`{"a":1}`)
	for _, id := range bad {
		check := func(method string, err error) {
			t.Helper()
			if err == nil {
				t.Errorf("%s(%q) accepted the id", method, id)
			} else if errors.Is(err, session.ErrUnavailable) {
				t.Errorf("%s(%q): a bad id is the caller's error, not the store's: %v", method, id, err)
			}
		}
		_, _, err := s.Get(ctx, id)
		check("Get", err)
		_, err = s.Touch(ctx, id, session.Turn{Cwd: "/a"}, time.Now())
		check("Touch", err)
		check("Delete", s.Delete(ctx, id))
		_, _, err = s.LoadTurns(ctx, id)
		check("LoadTurns", err)
		check("AppendTurn", s.AppendTurn(ctx, id, turn))
		check("PutAnswer with that answer id", s.PutAnswer(ctx, session.PagedAnswer{ID: id, Pages: []string{"p"}, Created: time.Now()}))
		if id != "" { // "" is an answer without a session
			check("PutAnswer with that session id", s.PutAnswer(ctx, session.PagedAnswer{ID: idC, SessionID: id, Pages: []string{"p"}, Created: time.Now()}))
		}
		_, _, err = s.GetAnswer(ctx, id)
		check("GetAnswer", err)
		release, err := s.Lease(ctx, id)
		check("Lease", err)
		if err == nil {
			release()
		}
	}
	// Nothing was recorded, under any spelling.
	if recs, _, err := s.List(ctx, session.Filter{Limit: 100}); len(recs) != 0 || err != nil {
		t.Errorf("List after bad ids: %v %v", recs, err)
	}
	for _, id := range []string{idA, idB} {
		if _, ok, err := s.Get(ctx, id); ok || err != nil {
			t.Errorf("Get(%s) after bad ids: ok %v, err %v", id, ok, err)
		}
		if turns, ok, err := s.LoadTurns(ctx, id); ok || len(turns) != 0 || err != nil {
			t.Errorf("LoadTurns(%s) after bad ids: %v %v %v", id, turns, ok, err)
		}
	}
	if _, ok, err := s.GetAnswer(ctx, idC); ok || err != nil {
		t.Errorf("GetAnswer(%s) after bad ids: ok %v, err %v", idC, ok, err)
	}
}

// uuid returns the lower-case UUID numbered i, for tests that need many.
func uuid(i int) string {
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i)
}

func (c *conformance) listAndLatest(t *testing.T) {
	s, ctx := c.store(t, defaults), ctxT(t)
	if recs, more, err := s.List(ctx, session.Filter{Limit: 10}); len(recs) != 0 || more || err != nil {
		t.Fatalf("List of an empty store: %v %v %v", recs, more, err)
	}
	if _, ok, err := session.Latest(ctx, s, session.Filter{}); ok || err != nil {
		t.Fatalf("Latest of an empty store: ok %v, err %v", ok, err)
	}
	// Sessions 0..6, touched in an order that is not their update order:
	// session i was updated at base+i minutes, in cwd /even or /odd.
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	const n = 7
	for _, i := range []int{3, 0, 6, 1, 5, 2, 4} {
		cwd := "/even"
		if i%2 == 1 {
			cwd = "/odd"
		}
		if _, err := s.Touch(ctx, uuid(i), session.Turn{Cwd: cwd, Owner: fmt.Sprint("owner", i%3)}, base.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	ids := func(recs []session.Record) []string {
		var out []string
		for _, r := range recs {
			out = append(out, r.ID)
		}
		return out
	}
	all := []string{uuid(6), uuid(5), uuid(4), uuid(3), uuid(2), uuid(1), uuid(0)}
	for _, tc := range []struct {
		offset, limit int
		want          []string
		more          bool
	}{
		{0, n, all, false},
		{0, 100, all, false},
		{0, 3, all[:3], true},
		{3, 3, all[3:6], true},
		{6, 3, all[6:], false},
		{4, 3, all[4:], false},
		{n, 3, nil, false},
		{n + 5, 3, nil, false},
		// Offsets and limits near the int's end (a cursor a client
		// made up) must not wrap around into "more follow".
		{math.MaxInt, 3, nil, false},
		{math.MaxInt - 1, 3, nil, false},
		{math.MaxInt - 2, math.MaxInt, nil, false},
		{3, math.MaxInt, all[3:], false},
	} {
		recs, more, err := s.List(ctx, session.Filter{Offset: tc.offset, Limit: tc.limit})
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(recs); fmt.Sprint(got) != fmt.Sprint(tc.want) || more != tc.more {
			t.Errorf("List(offset %d, limit %d) = %v more %v, want %v more %v", tc.offset, tc.limit, got, more, tc.want, tc.more)
		}
	}
	recs, more, err := s.List(ctx, session.Filter{Cwd: "/odd", Offset: 1, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(recs); fmt.Sprint(got) != fmt.Sprint([]string{uuid(3)}) || !more {
		t.Errorf("List(odd, offset 1, limit 1) = %v more %v, want [%s] more true", got, more, uuid(3))
	}
	recs, more, err = s.List(ctx, session.Filter{Cwd: "/odd", Offset: 2, Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(recs); fmt.Sprint(got) != fmt.Sprint([]string{uuid(1)}) || more {
		t.Errorf("List(odd, offset 2, limit 5) = %v more %v, want [%s] more false", got, more, uuid(1))
	}

	for _, tc := range []struct {
		f    session.Filter
		want string
	}{
		{session.Filter{}, uuid(6)},
		{session.Filter{Cwd: "/odd"}, uuid(5)},
		{session.Filter{Cwd: "/even", Owner: "owner1", ByOwner: true}, uuid(4)},
		{session.Filter{Owner: "owner2", ByOwner: true}, uuid(5)},
		{session.Filter{Cwd: "/nowhere"}, ""},
		{session.Filter{Client: "mcp:nobody"}, ""},
		// The offset and limit of Latest's filter do not matter.
		{session.Filter{Offset: 3, Limit: 0}, uuid(6)},
	} {
		r, ok, err := session.Latest(ctx, s, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if ok != (tc.want != "") || r.ID != tc.want {
			t.Errorf("Latest(%+v) = %q (ok %v), want %q", tc.f, r.ID, ok, tc.want)
		}
	}

	// A new turn moves a session to the front.
	if _, err := s.Touch(ctx, uuid(0), session.Turn{Cwd: "/even"}, base.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if r, _, err := session.Latest(ctx, s, session.Filter{}); err != nil || r.ID != uuid(0) {
		t.Errorf("Latest after touching %s again: %q %v", uuid(0), r.ID, err)
	}
}

// listFilters checks every filter of List, alone and together, page by
// page, against Filter.Match over the records Touch returned: sessions of
// several owners (and none), clients, directories, backends and hosts,
// some updated at the same time (then the lower id comes first), some
// touched again by another client in another directory.
func (c *conformance) listFilters(t *testing.T) {
	s, ctx := c.store(t, defaults), ctxT(t)
	base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	owners := []string{"", "o1", "o2"}
	clients := []string{"", "token:o1", "mcp:x"}
	backends := []string{"", "cli", "api"}
	hosts := []string{"", "h1", "h2"}
	const n = 40
	recs := map[string]session.Record{}
	for i := range n {
		turn := session.Turn{Cwd: []string{"/a", "/b"}[i%2], Owner: owners[i%3], Client: clients[i/3%3],
			Backend: backends[i/2%3], Host: hosts[i/5%3]}
		// Three sessions a minute, touched out of order.
		j := (i * 7) % n
		r, err := s.Touch(ctx, uuid(j), turn, base.Add(time.Duration(j/3)*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		recs[r.ID] = r
	}
	// Some come back with another client, in another directory.
	for i := 0; i < n; i += 4 {
		r, err := s.Touch(ctx, uuid(i), session.Turn{Cwd: "/c", Client: clients[(i+1)%3]}, base.Add(time.Hour+time.Duration(i%8)*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		recs[r.ID] = r
	}
	want := func(f session.Filter) []string {
		var sel []session.Record
		for _, r := range recs {
			if f.Match(r) {
				sel = append(sel, r)
			}
		}
		sortRecords(sel)
		var out []string
		for _, r := range sel {
			out = append(out, r.ID)
		}
		return out
	}
	var filters []session.Filter
	for _, o := range []struct {
		owner string
		by    bool
	}{{"", false}, {"", true}, {"o1", true}, {"o2", true}, {"nobody", true}} {
		for _, client := range []string{"", "token:o1", "mcp:x", "mcp:none"} {
			for _, cwd := range []string{"", "/a", "/c"} {
				for _, be := range []string{"", "cli", "api"} {
					for _, h := range []struct {
						host string
						by   bool
					}{{"", false}, {"", true}, {"h1", true}} {
						filters = append(filters, session.Filter{Owner: o.owner, ByOwner: o.by, Client: client, Cwd: cwd,
							Backend: be, Host: h.host, ByHost: h.by})
					}
				}
			}
		}
	}
	for i, f := range filters {
		// Each filter has its own deadline: together they are many
		// queries, which a busy machine under the race detector runs
		// slowly.
		ctx := ctxT(t)
		w := want(f)
		// Page by page, as the sessions tool does: 3 at a time for every
		// fifth filter, whole for the others (which costs one query), so
		// that each filter is checked and paging is checked under each
		// kind of filter.
		size := n + 1
		if i%5 == 0 {
			size = 3
		}
		var got []string
		for off := 0; ; off += size {
			f.Offset, f.Limit = off, size
			page, more, err := s.List(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range page {
				got = append(got, r.ID)
				if !same(r, recs[r.ID]) {
					t.Errorf("List(%+v) listed %+v, want %+v", f, r, recs[r.ID])
				}
			}
			if wantMore := off+size < len(w); more != wantMore {
				t.Errorf("List(%+v): more %v, want %v", f, more, wantMore)
			}
			if !more || off > n {
				break
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("List(%+v) page by page:\n got %v\nwant %v", f, got, w)
		}
		// Latest is the first of them.
		r, ok, err := session.Latest(ctx, s, f)
		if err != nil || ok != (len(w) > 0) || ok && r.ID != w[0] {
			t.Errorf("Latest(%+v) = %s %v %v, want %v", f, r.ID, ok, err, w)
		}
		// Offsets and limits near the int's end, for every fifth filter
		// (others than those paged by 3).
		if i%5 != 1 {
			continue
		}
		for _, ol := range [][2]int{{math.MaxInt, 3}, {math.MaxInt - 1, math.MaxInt}, {1, math.MaxInt}} {
			f.Offset, f.Limit = ol[0], ol[1]
			page, more, err := s.List(ctx, f)
			wantN := 0
			if ol[0] < len(w) {
				wantN = len(w) - ol[0]
			}
			if err != nil || len(page) != wantN || more {
				t.Errorf("List(%+v) = %d records, more %v, %v; want %d, more false", f, len(page), more, err, wantN)
			}
		}
	}
	if _, _, err := s.List(ctx, session.Filter{Offset: -1, Limit: 1}); err == nil || errors.Is(err, session.ErrUnavailable) {
		t.Errorf("List with a negative offset: %v, want the caller's error", err)
	}
	if _, _, err := s.List(ctx, session.Filter{Limit: -1}); err == nil || errors.Is(err, session.ErrUnavailable) {
		t.Errorf("List with a negative limit: %v, want the caller's error", err)
	}
}

// same reports whether a and b are the same record, their times equal
// whatever their locations and monotonic readings.
func same(a, b session.Record) bool {
	if !a.Created.Equal(b.Created) || !a.Updated.Equal(b.Updated) {
		return false
	}
	a.Created, a.Updated, b.Created, b.Updated = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	return a == b
}

// sortRecords sorts records in List's order: the newest first, the lower
// id first among equal times.
func sortRecords(recs []session.Record) {
	slices.SortFunc(recs, func(a, b session.Record) int {
		if c := b.Updated.Compare(a.Updated); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
}

// listExpired checks that an expired session leaves every list, whatever
// the filter, and that one coming back lists once, where its new turn
// puts it.
func (c *conformance) listExpired(t *testing.T) {
	opts := defaults
	opts.TTL = shortTTL
	s, ctx := c.store(t, opts), ctxT(t)
	turn := session.Turn{Cwd: "/a", Owner: "o1", Client: "token:o1", Backend: "api"}
	if _, err := s.Touch(ctx, idA, turn, time.Now()); err != nil {
		t.Fatal(err)
	}
	filters := []session.Filter{{}, {Owner: "o1", ByOwner: true}, {Client: "token:o1"}, {Cwd: "/a"}, {Backend: "api"}}
	waitFor(t, "the session expires", func() bool {
		_, ok, err := s.Get(ctx, idA)
		if err != nil {
			t.Fatal(err)
		}
		return !ok
	})
	for _, f := range filters {
		f.Limit = 10
		if recs, more, err := s.List(ctx, f); len(recs) != 0 || more || err != nil {
			t.Errorf("List(%+v) lists an expired session: %v %v %v", f, recs, more, err)
		}
	}
	// Back, with another client and directory: listed once, as it is now.
	r, err := s.Touch(ctx, idA, session.Turn{Cwd: "/b", Owner: "o2", Client: "mcp:y", Backend: "cli"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []session.Filter{{}, {Owner: "o2", ByOwner: true}, {Client: "mcp:y"}, {Cwd: "/b"}, {Backend: "cli"}} {
		f.Limit = 10
		recs, more, err := s.List(ctx, f)
		if err != nil || more || len(recs) != 1 || !same(recs[0], r) {
			t.Errorf("List(%+v) after the session came back: %v %v %v, want [%+v]", f, recs, more, err, r)
		}
	}
	for _, f := range filters[1:] {
		f.Limit = 10
		if recs, _, err := s.List(ctx, f); len(recs) != 0 || err != nil {
			t.Errorf("List(%+v) lists the session as it was before it expired: %v %v", f, recs, err)
		}
	}
}

func (c *conformance) delete(t *testing.T) {
	s, ctx := c.store(t, defaults), ctxT(t)
	if err := s.Delete(ctx, idA); err != nil {
		t.Fatalf("Delete of a session that does not exist: %v", err)
	}
	for _, id := range []string{idA, idB} {
		if _, err := s.Touch(ctx, id, session.Turn{Cwd: "/a"}, time.Now()); err != nil {
			t.Fatal(err)
		}
		if err := s.AppendTurn(ctx, id, json.RawMessage(`{"n":1}`)); err != nil {
			t.Fatal(err)
		}
	}
	ansA, ansB := uuid(100), uuid(101)
	if err := s.PutAnswer(ctx, session.PagedAnswer{ID: ansA, SessionID: idA, Pages: []string{"a1", "a2"}, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := s.PutAnswer(ctx, session.PagedAnswer{ID: ansB, SessionID: idB, Pages: []string{"b1", "b2"}, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, idA); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.Get(ctx, idA); ok || err != nil {
		t.Errorf("Get after Delete: ok %v, err %v", ok, err)
	}
	if turns, ok, err := s.LoadTurns(ctx, idA); ok || len(turns) != 0 || err != nil {
		t.Errorf("LoadTurns after Delete: %s %v %v", turns, ok, err)
	}
	if _, ok, err := s.GetAnswer(ctx, ansA); ok || err != nil {
		t.Errorf("GetAnswer of the deleted session's answer: ok %v, err %v", ok, err)
	}
	if recs, _, err := s.List(ctx, session.Filter{Limit: 10}); err != nil || len(recs) != 1 || recs[0].ID != idB {
		t.Errorf("List after Delete: %v %v", recs, err)
	}
	// The other session keeps everything.
	if _, ok, err := s.Get(ctx, idB); !ok || err != nil {
		t.Errorf("Get of the other session: ok %v, err %v", ok, err)
	}
	if turns, ok, err := s.LoadTurns(ctx, idB); !ok || len(turns) != 1 || err != nil {
		t.Errorf("LoadTurns of the other session: %s %v %v", turns, ok, err)
	}
	if _, ok, err := s.GetAnswer(ctx, ansB); !ok || err != nil {
		t.Errorf("GetAnswer of the other session's answer: ok %v, err %v", ok, err)
	}
	// A deleted session starts afresh.
	r, err := s.Touch(ctx, idA, session.Turn{Cwd: "/c"}, time.Now())
	if err != nil || r.Turns != 1 || r.Cwd != "/c" {
		t.Errorf("Touch after Delete: %+v %v", r, err)
	}
	if turns, ok, err := s.LoadTurns(ctx, idA); ok || len(turns) != 0 || err != nil {
		t.Errorf("LoadTurns after Delete and Touch: %s %v %v", turns, ok, err)
	}
}

func (c *conformance) turns(t *testing.T) {
	s, ctx := c.store(t, defaults), ctxT(t)
	if turns, ok, err := s.LoadTurns(ctx, idA); ok || len(turns) != 0 || err != nil {
		t.Fatalf("LoadTurns of a session never recorded: %s %v %v", turns, ok, err)
	}
	in := []string{
		`{ "role": "user",  "parts": [ { "text": "héllo\nwörld \u2028 \"quoted\"" } ] }`,
		`"a plain string"`,
		`[1, 2.5, null, true]`,
		`{"nested":{"deep":{"deeper":[{}]}}}`,
	}
	for _, turn := range in {
		if err := s.AppendTurn(ctx, idA, json.RawMessage(turn)); err != nil {
			t.Fatal(err)
		}
	}
	turns, ok, err := s.LoadTurns(ctx, idA)
	if !ok || err != nil || len(turns) != len(in) {
		t.Fatalf("LoadTurns: %d turns, ok %v, err %v; want %d", len(turns), ok, err, len(in))
	}
	for i, turn := range in {
		// A turn comes back as the same JSON value, compacted.
		var want strings.Builder
		var v any
		if err := json.Unmarshal([]byte(turn), &v); err != nil {
			t.Fatal(err)
		}
		var got any
		if err := json.Unmarshal(turns[i], &got); err != nil {
			t.Fatalf("turn %d is not JSON: %s", i, turns[i])
		}
		if fmt.Sprint(got) != fmt.Sprint(v) {
			t.Errorf("turn %d = %s, want the value of %s", i, turns[i], turn)
		}
		want.WriteString(compact(t, turn))
		if string(turns[i]) != want.String() {
			t.Errorf("turn %d = %s, want it compacted: %s", i, turns[i], want.String())
		}
	}
	// A turn that is not JSON is refused and changes nothing.
	for _, bad := range []string{``, `{"open": `, `not json`, `{"a":1} {"b":2}`} {
		if err := s.AppendTurn(ctx, idA, json.RawMessage(bad)); err == nil {
			t.Errorf("AppendTurn accepted %q", bad)
		}
		if err := s.AppendTurn(ctx, idB, json.RawMessage(bad)); err == nil {
			t.Errorf("AppendTurn accepted %q", bad)
		}
	}
	if turns, _, err := s.LoadTurns(ctx, idA); err != nil || len(turns) != len(in) {
		t.Errorf("after refused turns: %d turns, %v; want %d", len(turns), err, len(in))
	}
	if turns, ok, err := s.LoadTurns(ctx, idB); ok || len(turns) != 0 || err != nil {
		t.Errorf("a refused first turn recorded something: %s %v %v", turns, ok, err)
	}
	// Turns alone make no record: the caller's Touch does.
	if _, ok, err := s.Get(ctx, idA); ok || err != nil {
		t.Errorf("Get of a session with turns but no Touch: ok %v, err %v", ok, err)
	}
}

func compact(t *testing.T, s string) string {
	t.Helper()
	var b strings.Builder
	var v json.RawMessage
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(v) // Marshal compacts a RawMessage
	if err != nil {
		t.Fatal(err)
	}
	b.Write(out)
	return b.String()
}

func (c *conformance) concurrentAppends(t *testing.T) {
	s, ctx := c.store(t, defaults), ctxT(t)
	const workers, each = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				if err := s.AppendTurn(ctx, idA, json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	turns, ok, err := s.LoadTurns(ctx, idA)
	if !ok || err != nil || len(turns) != workers*each {
		t.Fatalf("LoadTurns after %d concurrent appends: %d turns, ok %v, err %v", workers*each, len(turns), ok, err)
	}
	next := make([]int, workers) // each writer's turns in the order it wrote them
	for _, turn := range turns {
		var v struct{ W, I int }
		if err := json.Unmarshal(turn, &v); err != nil {
			t.Fatal(err)
		}
		if v.I != next[v.W] {
			t.Fatalf("writer %d's turn %d came after its turn %d", v.W, v.I, next[v.W]-1)
		}
		next[v.W]++
	}
}

func (c *conformance) answers(t *testing.T) {
	s, ctx := c.store(t, defaults), ctxT(t)
	if _, ok, err := s.GetAnswer(ctx, idC); ok || err != nil {
		t.Fatalf("GetAnswer of an unknown answer: ok %v, err %v", ok, err)
	}
	created := time.Date(2026, 11, 22, 12, 0, 0, 5, time.UTC)
	a := session.PagedAnswer{ID: idC, SessionID: idA, Pages: []string{"page one\n", "page two, é", ""}, Created: created}
	if err := s.PutAnswer(ctx, a); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.GetAnswer(ctx, idC)
	if !ok || err != nil {
		t.Fatalf("GetAnswer: ok %v, err %v", ok, err)
	}
	checkAnswer(t, got, a)
	// An answer without a session.
	b := session.PagedAnswer{ID: idB, Pages: []string{"x", "y"}, Dropped: 7, Created: created}
	if err := s.PutAnswer(ctx, b); err != nil {
		t.Fatal(err)
	}
	got, ok, err = s.GetAnswer(ctx, idB)
	if !ok || err != nil {
		t.Fatalf("GetAnswer of an answer without a session: ok %v, err %v", ok, err)
	}
	checkAnswer(t, got, b)
}

func checkAnswer(t *testing.T, got, want session.PagedAnswer) {
	t.Helper()
	if got.ID != want.ID || got.SessionID != want.SessionID || got.Dropped != want.Dropped ||
		!got.Created.Equal(want.Created) || fmt.Sprintf("%q", got.Pages) != fmt.Sprintf("%q", want.Pages) {
		t.Errorf("answer:\n got %+v\nwant %+v", got, want)
	}
}

func (c *conformance) answerBudget(t *testing.T) {
	opts := defaults
	opts.MaxPagedBytes = 100
	s, ctx := c.store(t, opts), ctxT(t)
	page := strings.Repeat("p", 20)
	put := func(i int, pages ...string) {
		t.Helper()
		if err := s.PutAnswer(ctx, session.PagedAnswer{ID: uuid(i), SessionID: idA, Pages: pages, Created: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	kept := func(i int) bool {
		t.Helper()
		_, ok, err := s.GetAnswer(ctx, uuid(i))
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	put(1, page, page) // 40 bytes
	put(2, page, page) // 80
	if !kept(1) || !kept(2) {
		t.Fatal("answers within the budget were dropped")
	}
	put(3, page, page) // 120: the oldest goes
	if kept(1) || !kept(2) || !kept(3) {
		t.Fatalf("over the budget: kept 1 %v, 2 %v, 3 %v; want only the oldest dropped", kept(1), kept(2), kept(3))
	}
	put(4, page, page, page, page) // 80 more: 2 and 3 go
	if kept(2) || kept(3) || !kept(4) {
		t.Fatalf("a large answer: kept 2 %v, 3 %v, 4 %v; want the older ones dropped", kept(2), kept(3), kept(4))
	}
	// An answer larger than the whole budget keeps its first pages, and
	// says how many bytes it lost.
	put(5, page, page, page, page, page, page, page) // 140
	a, ok, err := s.GetAnswer(ctx, uuid(5))
	if !ok || err != nil {
		t.Fatalf("an answer larger than the budget: ok %v, err %v", ok, err)
	}
	n := 0
	for i, p := range a.Pages {
		if p != page {
			t.Fatalf("page %d of the cut answer is %q", i+1, p)
		}
		n += len(p)
	}
	if len(a.Pages) == 0 || n > 100 || n+a.Dropped != 140 {
		t.Fatalf("the cut answer keeps %d pages (%d bytes) and says %d were dropped; want its first pages within 100 bytes, and the rest of 140 dropped", len(a.Pages), n, a.Dropped)
	}
	if kept(4) {
		t.Fatal("an older answer survived an answer that fills the budget")
	}
}

// waitGone polls cond until it is true, failing the test after deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	give := time.After(deadline)
	for !cond() {
		select {
		case <-tick.C:
		case <-give:
			t.Fatalf("%s: not after %v", what, deadline)
		}
	}
}

const shortTTL = time.Second

func (c *conformance) ttl(t *testing.T) {
	opts := defaults
	opts.TTL = shortTTL
	s, ctx := c.store(t, opts), ctxT(t)
	start := time.Now()
	if _, err := s.Touch(ctx, idA, session.Turn{Cwd: "/a"}, start); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendTurn(ctx, idA, json.RawMessage(`{"n":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.PutAnswer(ctx, session.PagedAnswer{ID: idC, SessionID: idA, Pages: []string{"p"}, Created: start}); err != nil {
		t.Fatal(err)
	}
	_, ok, err := s.Get(ctx, idA)
	if err != nil {
		t.Fatal(err)
	}
	// Only a check made within the TTL of the Touch can demand the session.
	if !ok && time.Since(start) < opts.TTL {
		t.Fatal("a session is gone right after its Touch")
	}
	waitFor(t, "the session expires", func() bool {
		_, ok, err := s.Get(ctx, idA)
		if err != nil {
			t.Fatal(err)
		}
		return !ok
	})
	if turns, ok, err := s.LoadTurns(ctx, idA); ok || len(turns) != 0 || err != nil {
		t.Errorf("the turns of an expired session: %s %v %v", turns, ok, err)
	}
	if _, ok, err := s.GetAnswer(ctx, idC); ok || err != nil {
		t.Errorf("the answer of an expired session: ok %v, err %v", ok, err)
	}
	if recs, _, err := s.List(ctx, session.Filter{Limit: 10}); len(recs) != 0 || err != nil {
		t.Errorf("List lists an expired session: %v %v", recs, err)
	}
	// An expired session is as unknown as one never recorded: a new turn
	// starts it afresh.
	r, err := s.Touch(ctx, idA, session.Turn{Cwd: "/new", Title: "new"}, time.Now())
	if err != nil || r.Turns != 1 || r.Title != "new" {
		t.Errorf("Touch of an expired session: %+v %v", r, err)
	}
	if turns, ok, err := s.LoadTurns(ctx, idA); ok || len(turns) != 0 || err != nil {
		t.Errorf("the old turns of an expired session came back: %s %v %v", turns, ok, err)
	}
}

func (c *conformance) appendRestartsTTL(t *testing.T) {
	opts := defaults
	opts.TTL = shortTTL
	s, ctx := c.store(t, opts), ctxT(t)
	start := time.Now()
	if _, err := s.Touch(ctx, idA, session.Turn{Cwd: "/a"}, start); err != nil {
		t.Fatal(err)
	}
	// Append turns for three TTLs: each restarts the clock, so the session
	// must be there, whole, whenever it is checked within a TTL of the
	// write before the append (that write kept it alive up to the append,
	// and the append keeps it from then on).
	tick := time.NewTicker(opts.TTL / 5)
	defer tick.Stop()
	n, prev := 0, start
	for time.Since(start) < 3*opts.TTL {
		before := time.Now()
		if err := s.AppendTurn(ctx, idA, json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))); err != nil {
			t.Fatal(err)
		}
		n++
		_, ok, err := s.Get(ctx, idA)
		if err != nil {
			t.Fatal(err)
		}
		turns, _, err := s.LoadTurns(ctx, idA)
		if err != nil {
			t.Fatal(err)
		}
		if time.Since(prev) >= opts.TTL {
			// The machine stalled for a TTL between two writes, so the
			// session may rightly have expired before the append: start
			// it again and go on.
			if err := s.Delete(ctx, idA); err != nil {
				t.Fatal(err)
			}
			prev = time.Now()
			if _, err := s.Touch(ctx, idA, session.Turn{Cwd: "/a"}, prev); err != nil {
				t.Fatal(err)
			}
			n = 0
		} else {
			if !ok || len(turns) != n {
				t.Fatalf("%v after the Touch and within the TTL of the last write: record %v, %d of %d turns", time.Since(start), ok, len(turns), n)
			}
			prev = before
		}
		<-tick.C
	}
	waitFor(t, "the session expires after its last append", func() bool {
		_, ok, err := s.Get(ctx, idA)
		if err != nil {
			t.Fatal(err)
		}
		return !ok
	})
}

func (c *conformance) lease(t *testing.T, s session.Store, ctx context.Context, id string) func() {
	t.Helper()
	release, err := s.Lease(ctx, id)
	if err != nil {
		t.Fatalf("Lease(%s): %v", id, err)
	}
	return release
}

// waiter takes id's lease in a goroutine and reports on the returned
// channel whether the holder had let it go (released) by then.
func waiter(s session.Store, ctx context.Context, id string, released *atomic.Bool) <-chan error {
	done := make(chan error, 1)
	go func() {
		release, err := s.Lease(ctx, id)
		if err != nil {
			done <- err
			return
		}
		if !released.Load() {
			err = errors.New("a second Lease took the lease while its holder had it")
		}
		release()
		done <- err
	}()
	return done
}

func (c *conformance) leaseWaits(t *testing.T) {
	s, ctx := c.store(t, defaults), ctxT(t)
	release := c.lease(t, s, ctx, idA)
	var released atomic.Bool
	done := waiter(s, ctx, idA, &released)
	// Another session's lease is free meanwhile; taking it gives the
	// waiter every chance to run.
	c.lease(t, s, ctx, idB)()
	released.Store(true)
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Free again.
	c.lease(t, s, ctx, idA)()
}

func (c *conformance) leaseOtherIDs(t *testing.T) {
	s, ctx := c.store(t, defaults), ctxT(t)
	releaseA := c.lease(t, s, ctx, idA)
	defer releaseA()
	releaseB := c.lease(t, s, ctx, idB)
	defer releaseB()
	// Many sessions at once, from goroutines.
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			release, err := s.Lease(ctx, uuid(i))
			if err != nil {
				errs <- err
				return
			}
			release()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func (c *conformance) leaseCancelled(t *testing.T) {
	s, ctx := c.store(t, defaults), ctxT(t)
	release := c.lease(t, s, ctx, idA)
	// Already cancelled.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Lease(cctx, idA); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lease with a cancelled context on a held lease: %v, want context.Canceled", err)
	}
	// Cancelled while waiting.
	cctx, cancel = context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		rel, err := s.Lease(cctx, idA)
		if err == nil {
			rel()
		}
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Lease cancelled while waiting: %v, want context.Canceled", err)
	}
	// A deadline.
	dctx, dcancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer dcancel()
	if _, err := s.Lease(dctx, idA); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Lease past its deadline: %v, want context.DeadlineExceeded", err)
	}
	// The cancelled calls hold nothing: once the holder lets go, the lease
	// is free at once.
	release()
	c.lease(t, s, ctx, idA)()
}

func (c *conformance) leaseReleaseTwice(t *testing.T) {
	s, ctx := c.store(t, defaults), ctxT(t)
	first := c.lease(t, s, ctx, idA)
	first()
	first()
	second := c.lease(t, s, ctx, idA)
	// The first holder's release, called again, must not free the second
	// holder's lease.
	first()
	var released atomic.Bool
	done := waiter(s, ctx, idA, &released)
	first()
	c.lease(t, s, ctx, idB)()
	released.Store(true)
	second()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func (c *conformance) leaseRenewed(t *testing.T) {
	opts := defaults
	// Long enough that a busy machine renews in time: a renewal comes
	// every third of it.
	opts.LeaseTTL = 1500 * time.Millisecond
	s, ctx := c.store(t, opts), ctxT(t)
	// The lease outlives the context it was taken with: it is the
	// holder's until released.
	lctx, cancel := context.WithCancel(ctx)
	start := time.Now()
	release := c.lease(t, s, lctx, idA)
	cancel()
	var released atomic.Bool
	done := waiter(s, ctx, idA, &released)
	// Hold it for two LeaseTTLs: renewals must keep it.
	tick := time.NewTicker(opts.LeaseTTL / 4)
	defer tick.Stop()
	for time.Since(start) < 2*opts.LeaseTTL {
		select {
		case err := <-done:
			t.Fatalf("a renewed lease was taken after %v (LeaseTTL %v): %v", time.Since(start), opts.LeaseTTL, err)
		case <-tick.C:
		}
	}
	released.Store(true)
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func (c *conformance) leaseClose(t *testing.T) {
	s, ctx := c.open(t, defaults), ctxT(t)
	release := c.lease(t, s, ctx, idA)
	// A Lease waiting when the store closes returns, with an error.
	done := make(chan error, 1)
	go func() {
		rel, err := s.Lease(ctx, idA)
		if err == nil {
			rel()
			err = errors.New("a Lease waiting on a held lease got it at Close")
		} else if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("a Lease waiting at Close did not return: %w", err)
		} else {
			err = nil
		}
		done <- err
	}()
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Releasing after Close is harmless.
	release()
	release()
}

package storetest

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

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

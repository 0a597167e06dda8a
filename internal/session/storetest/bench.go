package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// benchOwners is how many bearer tokens the sessions of BenchSessionsPage
// belong to; one session in a hundred has no owner (stdio, or HTTP
// without tokens), as a store shared by such servers has. They work in
// benchDirs directories.
const (
	benchOwners = 100
	benchDirs   = 50
)

// BenchSessionsPage measures the page the sessions tool asks for and the
// newest session chat-reply continues without a sessionId, at 1,000 and
// 10,000 stored sessions: the time of a page should not grow with the
// sessions stored. open returns a new, empty store, which the benchmark
// closes.
func BenchSessionsPage(b *testing.B, open func(b *testing.B) session.Store) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := open(b)
			defer s.Close()
			ctx := context.Background()
			base := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
			for i := range n {
				owner := fmt.Sprint("token", i%benchOwners)
				if i%100 == 99 {
					owner = ""
				}
				t := session.Turn{Cwd: fmt.Sprint("/home/user/project", i%benchDirs), Model: "gemini-2.5-pro", Owner: owner,
					Client: fmt.Sprint("token:", owner), Backend: "api", Title: "How do I"}
				if _, err := s.Touch(ctx, uuid(i), t, base.Add(time.Duration(i)*time.Second)); err != nil {
					b.Fatal(err)
				}
			}
			for _, q := range benchQueries {
				b.Run(q.name, func(b *testing.B) {
					for b.Loop() {
						recs, _, err := benchList(ctx, s, q)
						if err != nil || len(recs) != min(q.limit, q.has(n)) {
							b.Fatalf("%d records, %v; want %d", len(recs), err, min(q.limit, q.has(n)))
						}
					}
				})
			}
		})
	}
}

// benchQuery is one list the server makes: the first page of the
// sessions tool on stdio, of an HTTP client with a token, in one
// directory, and chat-reply's newest session of a client with sessions
// and of a new one.
type benchQuery struct {
	name          string
	owner, client string
	byOwner       bool
	cwd           string
	limit         int
	// has is how many of n sessions the query selects.
	has func(n int) int
}

var benchQueries = []benchQuery{
	{name: "all", limit: 20, has: func(n int) int { return n }},
	{name: "owner", owner: "token3", byOwner: true, limit: 20, has: func(n int) int { return n/benchOwners + n/100 }},
	{name: "cwd", cwd: "/home/user/project2", limit: 20, has: func(n int) int { return n / benchDirs }},
	{name: "latest", owner: "token3", byOwner: true, client: "token:token3", limit: 1, has: func(n int) int { return n / benchOwners }},
	{name: "latest-new", owner: "token-new", byOwner: true, client: "token:token-new", limit: 1, has: func(int) int { return 0 }},
}

func benchList(ctx context.Context, s session.Store, q benchQuery) ([]session.Record, bool, error) {
	f := session.Filter{Owner: q.owner, ByOwner: q.byOwner, Client: q.client, Cwd: q.cwd, Limit: q.limit}
	if q.client != "" {
		f.Backend = "api"
	}
	return s.List(ctx, f)
}

package redisstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/storetest"
)

// benchTurn is a turn of about the size of a short API exchange.
var benchTurn = json.RawMessage(fmt.Sprintf(`{"role":"model","parts":[{"text":%q}]}`, strings.Repeat("lorem ipsum ", 40)))

// BenchmarkTurn measures a turn's store cost on a conversation of 1, 100
// and 1,000 turns: appending the turn and reading the whole history back,
// as the API backend does for each call. The conversation keeps its
// length: the appended turn is removed, off the clock.
func BenchmarkTurn(b *testing.B) {
	srv := redistest.Start(b)
	s, err := Open(context.Background(), srv.URL(0), session.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	c := plainB(b, srv)
	ctx := context.Background()
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			id := session.NewUUID()
			for range n - 1 {
				if err := s.AppendTurn(ctx, id, benchTurn); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for b.Loop() {
				if err := s.AppendTurn(ctx, id, benchTurn); err != nil {
					b.Fatal(err)
				}
				turns, _, err := s.LoadTurns(ctx, id)
				if err != nil || len(turns) != n {
					b.Fatalf("%d turns, %v; want %d", len(turns), err, n)
				}
				b.StopTimer()
				if err := c.RPop(ctx, s.turnsKey(id)).Err(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkTouch measures recording a finished turn in a session's record.
func BenchmarkTouch(b *testing.B) {
	srv := redistest.Start(b)
	s, err := Open(context.Background(), srv.URL(0), session.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	id := session.NewUUID()
	t := session.Turn{Cwd: "/home/user/project", Model: "gemini-2.5-flash", Backend: "api", Title: "How do I"}
	for b.Loop() {
		if _, err := s.Touch(ctx, id, t, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSessionsPage is a page of the sessions tool and chat-reply's
// newest session, at 1,000 and 10,000 stored sessions.
func BenchmarkSessionsPage(b *testing.B) {
	srv := redistest.Start(b)
	db := 0
	storetest.BenchSessionsPage(b, func(b *testing.B) session.Store {
		db++
		s, err := Open(context.Background(), srv.URL(db), session.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}

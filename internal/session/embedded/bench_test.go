package embedded

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/storetest"
)

// benchTurn is a turn of the size of a short exchange with the API
// backend: about half a kilobyte of JSON.
func benchTurn(i int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"role":"model","parts":[{"text":%q}]}`, strings.Repeat(fmt.Sprintf("answer %d. ", i), 40)))
}

// BenchmarkTurn is a turn's store cost for the API backend: append one
// turn to a conversation and read the whole conversation back, at
// conversations of 1, 100 and 1,000 turns.
func BenchmarkTurn(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := open(b, filepath.Join(b.TempDir(), "sessions.db"), session.Options{})
			ctx := context.Background()
			appendTurns(b, s, n-1)
			turn := benchTurn(n)
			for b.Loop() {
				if err := s.AppendTurn(ctx, idA, turn); err != nil {
					b.Fatal(err)
				}
				turns, _, err := s.LoadTurns(ctx, idA)
				if err != nil || len(turns) != n {
					b.Fatalf("%d turns, %v", len(turns), err)
				}
				// Back to n-1 turns, off the clock, so that every
				// iteration measures a conversation of n.
				b.StopTimer()
				if _, err := s.db.Exec(`DELETE FROM turns WHERE session_id = ? AND seq = ?`, idA, n); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkTouch is the cost of recording a finished turn in a session's
// record.
func BenchmarkTouch(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "sessions.db"), session.Options{})
	ctx := context.Background()
	t := session.Turn{Cwd: "/home/user/project", Model: "gemini-2.5-pro", Client: "mcp:claude-code", Backend: "api", Title: "How do I"}
	for b.Loop() {
		if _, err := s.Touch(ctx, idA, t, time.Now()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendTurn is the append alone, after 1 and 1,000 turns: its
// cost must not grow with the conversation.
func BenchmarkAppendTurn(b *testing.B) {
	for _, n := range []int{1, 1000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			s := open(b, filepath.Join(b.TempDir(), "sessions.db"), session.Options{})
			ctx := context.Background()
			appendTurns(b, s, n-1)
			turn := benchTurn(n)
			for b.Loop() {
				if err := s.AppendTurn(ctx, idA, turn); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTouchConcurrent is the record of a new chat's first turn with
// 16 callers at once (8 per CPU), as when an HTTP server answers many
// clients: each call records a session of its own, from a goroutine of
// its own (as the SDK runs each request), whose stack starts small.
func BenchmarkTouchConcurrent(b *testing.B) {
	s := open(b, filepath.Join(b.TempDir(), "sessions.db"), session.Options{})
	ctx := context.Background()
	t := session.Turn{Cwd: "/home/user/project", Model: "gemini-2.5-pro", Client: "mcp:claude-code", Backend: "cli", Title: "How do I"}
	b.SetParallelism(16 / max(1, runtime.GOMAXPROCS(0)))
	b.RunParallel(func(pb *testing.PB) {
		done := make(chan error)
		for pb.Next() {
			go func() {
				_, err := s.Touch(ctx, session.NewUUID(), t, time.Now())
				done <- err
			}()
			if err := <-done; err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// appendTurns gives session idA n turns.
func appendTurns(b *testing.B, s *Store, n int) {
	b.Helper()
	for i := range n {
		if err := s.AppendTurn(context.Background(), idA, benchTurn(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSessionsPage is a page of the sessions tool and chat-reply's
// newest session, at 1,000 and 10,000 stored sessions.
func BenchmarkSessionsPage(b *testing.B) {
	storetest.BenchSessionsPage(b, func(b *testing.B) session.Store {
		s, err := Open(filepath.Join(b.TempDir(), "sessions.db"), session.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}

package redisstore

import (
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// TestTakeCall: the bucket holds n calls, refuses the next with the time
// until one is regained, keeps its keys apart, and expires in Redis.
func TestTakeCall(t *testing.T) {
	srv := redistest.Start(t)
	s := open(t, srv, session.Options{})
	ctx := t.Context()
	for i := range 2 {
		if ok, _, err := s.TakeCall(ctx, "token:a/analyze", 2, time.Minute); err != nil || !ok {
			t.Fatalf("call %d: %v %v", i+1, ok, err)
		}
	}
	ok, wait, err := s.TakeCall(ctx, "token:a/analyze", 2, time.Minute)
	if err != nil || ok || wait <= 0 || wait > 30*time.Second {
		t.Fatalf("third call: ok %v, wait %v, %v; want refused within 30 s", ok, wait, err)
	}
	if ok, _, err := s.TakeCall(ctx, "token:b/analyze", 2, time.Minute); err != nil || !ok {
		t.Fatalf("another client: %v %v", ok, err)
	}
	// A second store on the same Redis (a replica) sees the same bucket.
	other := open(t, srv, session.Options{})
	if ok, _, err := other.TakeCall(ctx, "token:a/analyze", 2, time.Minute); err != nil || ok {
		t.Fatalf("the replica took a call the bucket does not have: %v %v", ok, err)
	}
	ttl, err := plain(t, srv).PTTL(ctx, s.prefix+"rate:token:a/analyze").Result()
	if err != nil || ttl <= 0 || ttl > time.Minute {
		t.Fatalf("PTTL %v %v, want within a minute", ttl, err)
	}
}

package acp

import (
	"context"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// stubFallback is a fallback that is not the one-shot backend: the warm
// backend takes any backend.Backend. It answers every turn in session
// with "fallback" as its Via, and records the turns.
type stubFallback struct {
	backend.Backend // the methods the warm backend does not call
	session         string
	turns           chan backend.Turn
}

func (f *stubFallback) Run(ctx context.Context, t backend.Turn) (*backend.Answer, error) {
	f.turns <- t
	return &backend.Answer{Text: "answered by the fallback", SessionID: f.session, Via: "fallback"}, nil
}

// TestWarmFallbackIsAnyBackend: the turns a warm process cannot serve go,
// unchanged, to the backend the warm one is given, whatever it is; and a
// session that backend answered in is never served warm again, since the
// warm process that held it no longer knows its last turn.
func TestWarmFallbackIsAnyBackend(t *testing.T) {
	env, _ := geminitest.TestFakeEnv(t)
	opts := Options{Warm: WarmOptions{SpareAge: -1}}
	opts.CLI.Gemini, opts.CLI.Env = fakeGemini, env
	fb := &stubFallback{turns: make(chan backend.Turn, 4)}
	opts.Fallback = fb
	b := New(opts, nil)
	t.Cleanup(b.Close)
	ctx, dir := geminitest.Context(t), geminitest.WorkDir(t)

	first, err := b.Run(ctx, backend.Turn{Prompt: "first", Dir: dir})
	if err != nil || first.Via != "warm" {
		t.Fatalf("a new chat: %v, served %+v, want warm", err, first)
	}
	fb.session = first.SessionID

	latest := backend.Turn{Prompt: "go on", Dir: dir, Session: "latest"}
	res, err := b.Run(ctx, latest)
	if err != nil || res.Via != "fallback" {
		t.Fatalf("a turn on the latest session: %v, served %+v, want the fallback", err, res)
	}
	if got := <-fb.turns; got.Prompt != latest.Prompt || got.Dir != latest.Dir || got.Session != latest.Session {
		t.Fatalf("the fallback got %+v, want %+v", got, latest)
	}

	res, err = b.Run(ctx, backend.Turn{Prompt: "and on", Dir: dir, Session: first.SessionID})
	if err != nil || res.Via != "fallback" {
		t.Fatalf("the session the fallback answered in: %v, served %+v, want the fallback again", err, res)
	}
}

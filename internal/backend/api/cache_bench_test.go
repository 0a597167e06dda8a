package api

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// benchContextTokens is the size of the file context of
// BenchmarkContextCache's threads, in the fake's tokens (words).
const benchContextTokens = 300_000

// BenchmarkContextCache runs 5-turn threads, as a codereview and its four
// continuations send them (the files at the start of the first prompt,
// Turn.ContextLen), over a 300k-token file context, against the fake API,
// with context caches and without (CacheTTL -1). Each thread is another
// caller's, so each makes its own cache. It reports, per thread, from the
// usage the fake answered:
//
//   - input-tokens: the prompt tokens billed at the full input rate (the
//     prompt's not read from a cache);
//   - cached-tokens: those read from a cache, billed at the cache rate;
//   - billed-equiv: input-tokens + cached-tokens/10, the input billed in
//     full-rate tokens at the Gemini API's cache rate for Gemini 2.5
//     models (a tenth of the input rate; the cache's storage, per token
//     and hour, comes on top);
//
// and the median time of the first turn (with caches: the cache's
// creation, then the request) and of the later ones.
func BenchmarkContextCache(b *testing.B) {
	fake := fakeapi.New()
	b.Cleanup(fake.Close)
	files := "## Files\n" + strings.Repeat("line ", benchContextTokens-2) + "\n\n"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	b.Cleanup(cancel)
	for _, mode := range []struct {
		name string
		ttl  time.Duration
	}{{"cache", 0}, {"nocache", -1}} {
		b.Run(mode.name, func(b *testing.B) {
			hist := memstore.New(session.Options{})
			b.Cleanup(func() { hist.Close() })
			be, err := New(Options{Getenv: env(fake), Timeout: time.Minute, CacheTTL: mode.ttl}, hist, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(be.Close)
			var input, cached, threads int
			var first, later []time.Duration
			for b.Loop() {
				threads++
				owner := fmt.Sprintf("token:bench%d", threads)
				id := ""
				for turn := range 5 {
					t := backend.Turn{Session: id, Owner: owner, SystemPrompt: "Review the code.", Prompt: fmt.Sprintf("## Context\nturn %d", turn)}
					if turn == 0 {
						t.Prompt, t.ContextLen = files+t.Prompt, len(files)
					}
					start := time.Now()
					a, err := be.Run(ctx, t)
					d := time.Since(start)
					if err != nil {
						b.Fatal(err)
					}
					if turn == 0 {
						first = append(first, d)
					} else {
						later = append(later, d)
					}
					id = a.SessionID
					input += a.Usage.PromptTokens - a.Usage.CachedTokens
					cached += a.Usage.CachedTokens
				}
			}
			b.ReportMetric(float64(input)/float64(threads), "input-tokens/thread")
			b.ReportMetric(float64(cached)/float64(threads), "cached-tokens/thread")
			b.ReportMetric((float64(input)+float64(cached)/10)/float64(threads), "billed-equiv/thread")
			b.ReportMetric(float64(median(first).Microseconds())/1000, "first-turn-ms")
			b.ReportMetric(float64(median(later).Microseconds())/1000, "later-turn-ms")
		})
	}
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}

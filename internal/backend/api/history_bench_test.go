package api

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// countingProxy forwards to the fake API over 127.0.0.1, counting the
// bytes of the request bodies the backend sends and the requests.
type countingProxy struct {
	srv      *httptest.Server
	bytes    atomic.Int64
	requests atomic.Int64
}

func newCountingProxy(b *testing.B, fake *fakeapi.Server) *countingProxy {
	target, err := url.Parse(fake.URL())
	if err != nil {
		b.Fatal(err)
	}
	p := &countingProxy{}
	rp := httputil.NewSingleHostReverseProxy(target)
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		p.bytes.Add(int64(len(body)))
		p.requests.Add(1)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		r.ContentLength = int64(len(body))
		rp.ServeHTTP(w, r)
	}))
	b.Cleanup(p.srv.Close)
	return p
}

// historyTurns and historyPromptBytes are the shape of
// BenchmarkServerHistory's conversations: 20 turns of about 2 KB.
const (
	historyTurns       = 20
	historyPromptBytes = 2000
)

// BenchmarkServerHistory runs 20-turn conversations of ~2 KB plain text
// turns on the API backend against the fake API, with --api-server-history
// (each turn a stored interaction, a reply continuing the last by
// previous_interaction_id) and without it (generateContent, the whole
// conversation resent each turn). It reports the request bytes the
// backend sent per conversation, for the last (20th) turn, and the number
// of requests per conversation, counted by a proxy in front of the fake.
func BenchmarkServerHistory(b *testing.B) {
	fake := fakeapi.New()
	b.Cleanup(fake.Close)
	fake.SetModels(append(fakeapi.DefaultModels(), fakeapi.InteractionsOnly()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	b.Cleanup(cancel)
	for _, mode := range []struct {
		name   string
		server bool
	}{{"resend", false}, {"server-history", true}} {
		b.Run(mode.name, func(b *testing.B) {
			proxy := newCountingProxy(b, fake)
			getenv := func(k string) string {
				if k == "GOOGLE_GEMINI_BASE_URL" {
					return proxy.srv.URL
				}
				return env(fake)(k)
			}
			hist := memstore.New(session.Options{})
			b.Cleanup(func() { hist.Close() })
			be, err := New(Options{Getenv: getenv, Timeout: time.Minute, ServerHistory: mode.server,
				InteractionPoll: time.Millisecond}, hist, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(be.Close)
			var total, last, requests int64
			var convs int
			for b.Loop() {
				convs++
				owner := fmt.Sprintf("token:history%d", convs)
				id := ""
				for turn := range historyTurns {
					prompt := fmt.Sprintf("turn %d: ", turn) + strings.Repeat("a word ", historyPromptBytes/7)
					before, reqs := proxy.bytes.Load(), proxy.requests.Load()
					a, err := be.Run(ctx, backend.Turn{Session: id, Owner: owner, Prompt: prompt})
					if err != nil {
						b.Fatal(err)
					}
					if mode.server != (a.Interaction != "") {
						b.Fatalf("turn %d: interaction %q with server history %v", turn, a.Interaction, mode.server)
					}
					id = a.SessionID
					sent := proxy.bytes.Load() - before
					total += sent
					requests += proxy.requests.Load() - reqs
					if turn == historyTurns-1 {
						last += sent
					}
				}
			}
			b.ReportMetric(float64(total)/float64(convs), "sent-B/conv")
			b.ReportMetric(float64(last)/float64(convs), "turn20-B")
			b.ReportMetric(float64(requests)/float64(convs), "requests/conv")
		})
	}
}

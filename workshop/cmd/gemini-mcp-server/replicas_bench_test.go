package main

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
)

// benchClients is how many clients call at once, as in bench's HTTP
// section at its highest concurrency.
const benchClients = 16

// BenchmarkHTTPStores measures calls/s over Streamable HTTP with the API
// backend on an instant fake Gemini API, for the two ways to run: one
// process on the embedded store (the default), and two stateless replicas
// on one Redis, the clients spread over both; and, to tell the store's
// share from the second process's, one process on Redis. Each call is a chat then a
// chat-reply to it on the other replica (or the same process): a new
// session, its two turns appended and its history read back, as a
// conversation that moves between replicas does. The fake API runs in the
// benchmark's process, on the same CPUs as the servers.
//
//	go test -run '^$' -bench HTTPStores -count 5 ./cmd/gemini-mcp-server
func BenchmarkHTTPStores(b *testing.B) {
	for _, c := range []struct {
		name     string
		replicas int
		redis    bool
	}{{"embedded-1-process", 1, false}, {"redis-1-process", 1, true}, {"redis-2-replicas", 2, true}} {
		b.Run(c.name, func(b *testing.B) {
			e, _ := apiEnv(b)
			args := []string{"--stateless", "--backend", "api", "--max-concurrent", fmt.Sprint(benchClients)}
			if c.redis {
				args = append(args, "--store", redistest.Start(b).URL(0))
			}
			var addrs []string
			for range c.replicas {
				addr, _ := startHTTP(b, e, args...)
				addrs = append(addrs, addr)
			}
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4 * benchClients}}
			b.Cleanup(hc.CloseIdleConnections)
			// Client i talks to replica i and i+1 (mod the replicas).
			clients := make([][2]*mcp.ClientSession, benchClients)
			for i := range clients {
				for k := range 2 {
					cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(context.Background(),
						&mcp.StreamableClientTransport{Endpoint: "http://" + addrs[(i+k)%len(addrs)] + "/mcp", HTTPClient: hc, DisableStandaloneSSE: true}, nil)
					if err != nil {
						b.Fatal(err)
					}
					b.Cleanup(func() { cs.Close() })
					clients[i][k] = cs
				}
			}
			var next, failed atomic.Int64
			b.SetParallelism((benchClients + 1) / 2) // GOMAXPROCS is 2 here
			start := time.Now()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				pair := clients[(next.Add(1)-1)%benchClients]
				for pb.Next() {
					res, err := callTool(pair[0], "chat", map[string]any{"prompt": "bench chat"})
					if err != nil || res.IsError {
						failed.Add(1)
						continue
					}
					res, err = callTool(pair[1], "chat-reply", map[string]any{"prompt": "bench reply", "sessionId": res.Meta["sessionId"]})
					if err != nil || res.IsError {
						failed.Add(1)
					}
				}
			})
			elapsed := time.Since(start)
			b.StopTimer()
			if n := failed.Load(); n > 0 {
				b.Fatalf("%d of %d iterations failed", n, b.N)
			}
			b.ReportMetric(float64(2*b.N)/elapsed.Seconds(), "calls/s")
		})
	}
}

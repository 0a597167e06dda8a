package redisstore

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/storetest"
)

// TestConformance runs the suite every session store passes, each store
// on a Redis of its own.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, opts session.Options) session.Store {
		srv := redistest.Start(t)
		s, err := Open(t.Context(), srv.URL(0), opts)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		return s
	})
}

// TestConformanceCluster runs the suite on a Redis Cluster of three
// masters: every script and transaction must find its keys on one slot.
// The stores share the cluster, each under a prefix of its own, so that
// each starts empty.
func TestConformanceCluster(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	runShared(t, c.URL())
}

// TestConformanceSentinel runs the suite on a master that a sentinel
// watches, with a replica, reached through the sentinel.
func TestConformanceSentinel(t *testing.T) {
	st := redistest.StartSentinel(t, 1, 1)
	runShared(t, st.URL(0))
}

// TestConformanceValkey runs the suite on Valkey, when valkey-server is
// installed (Debian 12 has no package of it: the test skips without).
func TestConformanceValkey(t *testing.T) {
	srv := redistest.StartValkey(t)
	runShared(t, srv.URL(0))
}

func runShared(t *testing.T, url string) {
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T, opts session.Options) session.Store {
		if opts.Prefix == "" {
			opts.Prefix = fmt.Sprintf("conformance%d:", n.Add(1))
		}
		s, err := Open(t.Context(), url, opts)
		if err != nil {
			t.Fatalf("Open %s: %v", url, err)
		}
		return s
	})
}

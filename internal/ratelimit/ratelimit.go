// Package ratelimit limits the calls each client may make of each tool
// (--rate-limits, which config parses): token buckets per caller and
// tool, kept in this process or shared by every replica through the Redis
// store, checked by a middleware every tools/call passes before anything
// runs.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/identity"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/metrics"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
)

// Limiter counts each client's calls of each tool in token buckets: a
// client may make Rate.N calls at once, and gains one back every
// Rate.Per/Rate.N. The buckets are kept in this process, or, with Shared
// set (the Redis store), where every replica counts in the same ones.
type Limiter struct {
	limits map[string]config.Rate
	now    func() time.Time
	// Shared, when set, keeps the buckets for every replica; while it
	// fails, this process's own buckets count instead.
	Shared SharedBuckets
	// Log hears of Shared's failures; nil discards them.
	Log *slog.Logger

	mu      sync.Mutex
	buckets map[bucketKey]*bucket
}

type bucketKey struct{ client, tool string }

// SharedBuckets are token buckets that several server processes share
// (the Redis store implements them): TakeCall takes one of the n calls
// per period of the bucket named key, or says how long until one is
// regained.
type SharedBuckets interface {
	TakeCall(ctx context.Context, key string, n int, per time.Duration) (ok bool, retryAfter time.Duration, err error)
}

type bucket struct {
	tokens float64
	at     time.Time // when tokens was computed
}

// NewLimiter returns a limiter of limits; now is time.Now when nil.
func NewLimiter(limits map[string]config.Rate, now func() time.Time) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{limits: limits, now: now, buckets: map[bucketKey]*bucket{}}
}

// maxIdleBuckets is how many buckets may be kept before the full ones (of
// clients idle long enough to have regained every call) are dropped.
const maxIdleBuckets = 4096

// Allow takes one call of tool for client, or reports how long the client
// must wait for one. Tools without a limit are always allowed.
func (l *Limiter) Allow(client, tool string) (ok bool, retryAfter time.Duration) {
	return l.allow(context.Background(), client, tool)
}

func (l *Limiter) allow(ctx context.Context, client, tool string) (ok bool, retryAfter time.Duration) {
	r, limited := l.limits[tool]
	if !limited {
		return true, 0
	}
	if l.Shared != nil {
		ok, wait, err := l.Shared.TakeCall(ctx, client+"/"+tool, r.N, r.Per)
		if err == nil {
			return ok, wait.Round(time.Millisecond)
		}
		// The limit still holds in this process while the shared store
		// is away.
		if l.Log != nil {
			l.Log.Warn("rate limits: the shared buckets failed; counting in this process", "err", err)
		}
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	k := bucketKey{client, tool}
	b := l.buckets[k]
	if b == nil {
		if len(l.buckets) >= maxIdleBuckets {
			l.dropFull(now)
		}
		b = &bucket{tokens: float64(r.N), at: now}
		l.buckets[k] = b
	}
	interval := r.Per / time.Duration(r.N) // the time to regain one call
	b.tokens = math.Min(float64(r.N), b.tokens+float64(now.Sub(b.at))/float64(interval))
	b.at = now
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) * float64(interval))
	return false, wait.Round(time.Millisecond)
}

// dropFull forgets the buckets that have regained every call: they are
// the same as no bucket.
func (l *Limiter) dropFull(now time.Time) {
	for k, b := range l.buckets {
		r := l.limits[k.tool]
		if b.tokens+float64(now.Sub(b.at))/float64(r.Per/time.Duration(r.N)) >= float64(r.N) {
			delete(l.buckets, k)
		}
	}
}

// Middleware refuses the tools/call requests over their caller's limit
// (identity.Of: its bearer token over HTTP, else its remote
// address, or "local" on stdio; never its MCP session alone, or a client
// would get fresh buckets by opening a new session) before anything runs.
// The tools named in rpcErrors (the expert tools) answer with a JSON-RPC
// error (tool failure, -32603, with data.retryAfterSeconds); the others
// (the chat tools) with their own error result, whose text says when to
// retry.
func (l *Limiter) Middleware(rpcErrors []string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			p, ok := req.GetParams().(*mcp.CallToolParamsRaw)
			if !ok {
				return next(ctx, method, req)
			}
			allowed, wait := l.allow(ctx, identity.Of(ctx), p.Name)
			if allowed {
				return next(ctx, method, req)
			}
			metrics.RateLimited(p.Name)
			secs := int(math.Ceil(wait.Seconds()))
			msg := fmt.Sprintf("this client has reached the rate limit of %s (%s): nothing was run. Retry in %d s, or ask the server's operator to raise --rate-limits",
				p.Name, l.limits[p.Name], secs)
			if !slices.Contains(rpcErrors, p.Name) {
				res := toolerr.Failure(errors.New(msg))
				res.Meta = mcp.Meta{"retryAfterSeconds": secs}
				return res, nil
			}
			return nil, toolerr.WireError(&toolerr.Error{Category: toolerr.ToolFailure, Msg: msg,
				Data: map[string]any{"reason": "rate_limited", "retryAfterSeconds": secs, "limit": l.limits[p.Name].String()}})
		}
	}
}

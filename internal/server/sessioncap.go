package server

import (
	"fmt"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/identity"
)

// sessionCap bounds the MCP sessions open at once, in total and per bearer
// token, so that a client cannot open sessions until memory runs out. A
// Streamable HTTP session counts from its initialize request until it ends
// (DELETE, idle timeout); an SSE session for as long as its stream is open.
type sessionCap struct {
	srv            *mcp.Server
	max, perToken  int
	tokens         bool
	mu             sync.Mutex
	streamable     map[string]string // session id -> token key
	pending, sse   map[string]int    // token key -> count
	pendingN, sseN int
}

func newSessionCap(srv *mcp.Server, o HTTPOptions) *sessionCap {
	c := &sessionCap{srv: srv, max: o.MaxSessions, perToken: o.MaxSessionsPerToken, tokens: len(o.Tokens) > 0 || o.OAuth != nil,
		streamable: map[string]string{}, pending: map[string]int{}, sse: map[string]int{}}
	if c.max <= 0 {
		c.max = config.DefaultMaxSessions
	}
	if c.perToken <= 0 {
		c.perToken = config.DefaultMaxSessionsPerToken
	}
	return c
}

// tokenKey is whose sessions the per-token cap counts: the token of the
// caller the auth check named (a static token's id, or an OAuth access
// token's subject's, whichever of its tokens it presents); "" for every
// request of a server without auth.
func tokenKey(r *http.Request) string {
	return identity.TokenOf(identity.Of(r.Context()))
}

// reserve takes a slot for a new session of key, or says why not.
func (c *sessionCap) reserve(key string, sse bool) (status int, msg string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	live := map[string]bool{}
	for ss := range c.srv.Sessions() {
		live[ss.ID()] = true
	}
	total, mine := c.pendingN+c.sseN, c.pending[key]+c.sse[key]
	for id, k := range c.streamable {
		if !live[id] {
			delete(c.streamable, id)
			continue
		}
		total++
		if k == key {
			mine++
		}
	}
	switch {
	case total >= c.max:
		return http.StatusServiceUnavailable, fmt.Sprintf("the server holds its maximum of %d MCP sessions (--max-sessions): "+
			"end sessions you no longer use (HTTP DELETE on %s with their Mcp-Session-Id), or retry once idle sessions have expired", c.max, PathMCP)
	case c.tokens && mine >= c.perToken:
		return http.StatusTooManyRequests, fmt.Sprintf("this token holds its maximum of %d MCP sessions (--max-sessions-per-token): "+
			"end sessions you no longer use (HTTP DELETE on %s with their Mcp-Session-Id) and reuse one session per client", c.perToken, PathMCP)
	}
	if sse {
		c.sse[key]++
		c.sseN++
	} else {
		c.pending[key]++
		c.pendingN++
	}
	return 0, ""
}

// settle turns a reservation into the session the request opened (id),
// or frees it when none was opened.
func (c *sessionCap) settle(key string, sse bool, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, n := c.pending, &c.pendingN
	if sse {
		m, n = c.sse, &c.sseN
	}
	if m[key]--; m[key] == 0 {
		delete(m, key)
	}
	*n--
	if id != "" {
		c.streamable[id] = key
	}
}

// wrap counts the requests that open sessions: a POST to /mcp without a
// session id (an initialize), and a GET of the SSE stream.
func (c *sessionCap) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sse := r.URL.Path == PathSSE && r.Method == http.MethodGet
		opens := sse || (r.URL.Path == PathMCP && r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "")
		if !opens {
			next.ServeHTTP(w, r)
			return
		}
		key := tokenKey(r)
		if status, msg := c.reserve(key, sse); status != 0 {
			http.Error(w, msg, status)
			return
		}
		id := ""
		defer func() { c.settle(key, sse, id) }()
		next.ServeHTTP(w, r)
		if !sse {
			id = w.Header().Get("Mcp-Session-Id")
		}
	})
}

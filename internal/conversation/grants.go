package conversation

import (
	"context"
	"sync"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// maxGrantCallers bounds the callers whose grants are kept; past it, the
// caller that was granted something longest ago is forgotten (and asked
// again).
const maxGrantCallers = 4096

// grants are the downstream tools and servers that each caller's user
// allowed for good ("always allow"): they hold for every conversation of
// that caller, in this process's memory, until the server stops. They
// are not shared between replicas.
type grants struct {
	mu    sync.Mutex
	by    map[string]*callerGrants
	order []string // callers, oldest first
}

type callerGrants struct {
	tools   map[string]bool // server + "\x00" + tool
	servers map[string]bool
}

// allows says whether caller's user allowed t for good.
func (g *grants) allows(caller string, t backend.HostTool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.by[caller]
	return c != nil && (c.servers[t.Server] || c.tools[t.Server+"\x00"+t.Tool])
}

// grant records the user's AllowTool or AllowServer for caller.
func (g *grants) grant(caller string, t backend.HostTool, d backend.Decision) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.by == nil {
		g.by = map[string]*callerGrants{}
	}
	c := g.by[caller]
	if c == nil {
		if len(g.order) >= maxGrantCallers {
			delete(g.by, g.order[0])
			g.order = g.order[1:]
		}
		c = &callerGrants{tools: map[string]bool{}, servers: map[string]bool{}}
		g.by[caller] = c
		g.order = append(g.order, caller)
	}
	if d == backend.AllowServer {
		c.servers[t.Server] = true
	} else {
		c.tools[t.Server+"\x00"+t.Tool] = true
	}
}

// confirmFor wraps ask, which puts the question to caller's user: what
// the user allowed for good is not asked again, and an "always" answer is
// remembered for caller.
func (g *grants) confirmFor(caller string, ask backend.Confirm) backend.Confirm {
	return func(ctx context.Context, r backend.ConfirmRequest) (backend.Decision, error) {
		if g.allows(caller, r.Tool) {
			return backend.AllowOnce, nil
		}
		d, err := ask(ctx, r)
		if err == nil && (d == backend.AllowTool || d == backend.AllowServer) {
			g.grant(caller, r.Tool, d)
		}
		return d, err
	}
}

//go:build unix

package deploy_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// stickyConfig is haproxy.cfg with its round robin replaced by the
// stick table docs/operators.md gives for replicas with MCP sessions.
func stickyConfig(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile("../docs/operators.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "```\nbackend replicas\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 || !strings.Contains(block, "stick") {
		t.Fatal("docs/operators.md has no HAProxy backend with a stick table")
	}
	cfg, err := os.ReadFile("haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	const rr = "\tbalance roundrobin\n"
	if !strings.Contains(string(cfg), rr) {
		t.Fatal("haproxy.cfg has no round robin to replace")
	}
	path := filepath.Join(t.TempDir(), "haproxy-sticky.cfg")
	if err := os.WriteFile(path, []byte(strings.Replace(string(cfg), rr, block, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestHAProxySticky runs replicas with MCP sessions (no --stateless)
// behind HAProxy with the stick table of docs/operators.md: several
// clients at once, each session's every call on the replica that created
// it, the sessions spread over the replicas. Without the stick table (the
// round robin of haproxy.cfg) a session's second request reaches another
// replica, which does not know it.
func TestHAProxySticky(t *testing.T) {
	t.Parallel()
	top := startHAProxy(t, stickyConfig(t), "sessions")
	const clients, turns = 4, 3
	used := map[int]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for k := range clients {
		c := top.client(nil)
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), guard)
			defer cancel()
			var id string
			for n := range turns {
				args := map[string]any{"prompt": fmt.Sprintf("sticky: client %d turn %d", k, n)}
				tool := "chat"
				if n > 0 {
					tool = "chat-reply"
					args["sessionId"] = id
				}
				res, err := c.call(ctx, tool, args, false)
				if err != nil {
					t.Errorf("client %d: %s: %v", k, tool, err)
					return
				}
				id, _ = res.Meta["sessionId"].(string)
			}
			on := map[int]bool{}
			for _, s := range c.rec.calls() {
				on[s.replica] = true
			}
			if len(on) != 1 || on[0] {
				t.Errorf("client %d: its calls were served by replicas %v, want one", k, on)
			}
			mu.Lock()
			for n := range on {
				used[n] = true
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(used) < 2 {
		t.Errorf("%d sessions all on replicas %v: want them spread", clients, used)
	}

	t.Run("WithoutStickiness", func(t *testing.T) {
		plain := startHAProxy(t, "haproxy.cfg", "sessions")
		c := &client{top: plain, rec: &recorder{top: plain, base: &http.Transport{}}}
		err := c.connect()
		if err == nil {
			defer c.cs.Close()
			ctx, cancel := context.WithTimeout(context.Background(), guard)
			defer cancel()
			_, err = c.call(ctx, "chat", map[string]any{"prompt": "sticky: round robin"}, false)
		}
		if err == nil {
			t.Fatal("a session's requests went round robin over replicas with sessions, and nothing failed")
		}
		t.Logf("round robin over replicas with sessions: %v", err)
	})
}

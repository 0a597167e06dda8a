package redisstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

func TestParseURL(t *testing.T) {
	t.Setenv("REDIS_PASSWORD", "")
	t.Setenv("REDIS_SENTINEL_PASSWORD", "")
	good := []struct {
		url, kind, where, master, user, pass string
		addrs                                []string
		db                                   int
		tls                                  bool
	}{
		{url: "redis://127.0.0.1:6379/2", kind: kindSingle, where: "127.0.0.1:6379"},
		{url: "redis+cluster://h1:7000,h2:7001,[::1]:7002", kind: kindCluster, where: "cluster h1:7000,h2:7001,[::1]:7002", addrs: []string{"h1:7000", "h2:7001", "[::1]:7002"}},
		{url: "rediss+cluster://u:p%40ss@h1:7000/", kind: kindCluster, where: "cluster h1:7000", addrs: []string{"h1:7000"}, user: "u", pass: "p@ss", tls: true},
		{url: "redis+sentinel://s1:26379,s2:26379/mymaster?db=3", kind: kindSentinel, where: "master mymaster of sentinels s1:26379,s2:26379", addrs: []string{"s1:26379", "s2:26379"}, master: "mymaster", db: 3},
		{url: "rediss+sentinel://:pw@s1:26379/m", kind: kindSentinel, where: "master m of sentinels s1:26379", addrs: []string{"s1:26379"}, master: "m", pass: "pw", tls: true},
	}
	for _, g := range good {
		tg, err := parseURL(g.url)
		if err != nil {
			t.Errorf("parseURL(%q): %v", g.url, err)
			continue
		}
		if tg.kind != g.kind || tg.where != g.where || tg.master != g.master || tg.user != g.user || tg.pass != g.pass || tg.db != g.db || (tg.tls != nil) != g.tls ||
			strings.Join(tg.addrs, " ") != strings.Join(g.addrs, " ") {
			t.Errorf("parseURL(%q) = %+v", g.url, tg)
		}
		if strings.Contains(Redact(g.url), "p@ss") || strings.Contains(Redact(g.url), ":pw@") {
			t.Errorf("Redact(%q) = %q", g.url, Redact(g.url))
		}
	}
	for _, bad := range []string{
		"redis+cluster://", "redis+cluster://h1", "redis+cluster://h1:x", "redis+cluster://h1:7000/0", "redis+cluster://h1:7000?db=1",
		"redis+sentinel://s1:26379", "redis+sentinel://s1:26379/", "redis+sentinel://s1:26379/m/x", "redis+sentinel://s1:26379/m?db=-1",
		"redis+sentinel://s1:26379/m?password=x", "redis+cluster://h1:7000,,h2:7001", "redis+unix://x", "valkey://h:1",
	} {
		if _, err := parseURL(bad); err == nil {
			t.Errorf("parseURL(%q): no error", bad)
		}
	}
	if _, err := parseURL("redis+cluster://u:s3cret@h1"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("an error shows the password: %v", err)
	}
	t.Setenv("REDIS_PASSWORD", "from-env")
	if tg, err := parseURL("redis+cluster://h1:7000"); err != nil || tg.pass != "from-env" {
		t.Errorf("REDIS_PASSWORD: %+v, %v", tg, err)
	}
}

// TestOpenClusterNode refuses a redis:// URL naming a node of a cluster,
// and names the URL to use.
func TestOpenClusterNode(t *testing.T) {
	c := redistest.StartCluster(t, 3)
	_, err := Open(t.Context(), "redis://"+c.Nodes[0].Addr()+"/0", session.Options{})
	if err == nil || !strings.Contains(err.Error(), "redis+cluster://"+c.Nodes[0].Addr()) {
		t.Fatalf("Open of a cluster node as one Redis: %v", err)
	}
}

// TestOpenClusterDown: a cluster none of whose nodes answers is
// unavailable, as one Redis is.
func TestOpenClusterDown(t *testing.T) {
	srv := redistest.Start(t)
	addr := srv.Addr()
	srv.Kill()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := Open(ctx, "redis+cluster://"+addr, session.Options{}); !errors.Is(err, session.ErrUnavailable) {
		t.Fatalf("Open of a cluster that is down: %v", err)
	}
}

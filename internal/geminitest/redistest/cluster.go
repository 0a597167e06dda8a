package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// The starters below poll the servers (geminitest.Poll) for the state
// they wait for (a cluster's slots all served, a replica in sync, a new
// master): Redis announces none of these to a client that is not
// subscribed, so they are polled, under a deadline.

// Tool returns the path of a Redis command (redis-cli), or skips t (fails
// it when EnvRequired is 1) when there is none.
func Tool(t testing.TB, name string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err == nil {
		return bin
	}
	why := name + " is not on PATH (Debian: apt-get install redis-server, which brings redis-tools)"
	if os.Getenv(EnvRequired) == "1" {
		t.Fatalf("%s, and %s=1 requires the Redis tests to run", why, EnvRequired)
		return ""
	}
	t.Skipf("%s: skipping; set %s=1 to make this a failure", why, EnvRequired)
	return ""
}

// Cluster is a running Redis Cluster of masters without replicas.
type Cluster struct {
	t     testing.TB
	Nodes []*Server
}

// StartCluster starts a Redis Cluster of n masters (at least 3) on
// loopback ports, with persistence on (appendonly, fsync always), so that
// a node killed and restarted comes back with its keys and its slots, as
// a managed cluster's node does. It returns once every slot is served.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	return StartClusterReplicas(t, n, 0)
}

// StartClusterReplicas starts a Redis Cluster of masters with replicas
// each (masters*(1+replicas) nodes), as StartCluster does.
func StartClusterReplicas(t testing.TB, masters, replicas int) *Cluster {
	t.Helper()
	n := masters * (1 + replicas)
	cli := Tool(t, "redis-cli")
	c := &Cluster{t: t}
	for range n {
		s := &Server{t: t, bin: Binary(t), dir: t.TempDir()}
		s.extra = func(s *Server) []string {
			return []string{"--cluster-enabled", "yes",
				"--cluster-config-file", filepath.Join(s.dir, "nodes.conf"),
				"--cluster-node-timeout", "5000",
				"--appendonly", "yes", "--appendfsync", "always"}
		}
		c.Nodes = append(c.Nodes, startWith(t, s))
	}
	args := []string{"--cluster", "create"}
	for _, s := range c.Nodes {
		args = append(args, s.Addr())
	}
	args = append(args, "--cluster-replicas", strconv.Itoa(replicas), "--cluster-yes")
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if out, err := exec.CommandContext(ctx, cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := c.WaitOK(ctx); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return c
}

// URL is the cluster's redis+cluster:// URL, naming every node.
func (c *Cluster) URL() string {
	addrs := make([]string, len(c.Nodes))
	for i, s := range c.Nodes {
		addrs[i] = s.Addr()
	}
	return "redis+cluster://" + strings.Join(addrs, ",")
}

// WaitOK returns once every running node says cluster_state:ok and knows
// every other node, or ctx ends.
func (c *Cluster) WaitOK(ctx context.Context) error {
	return geminitest.Poll(ctx, "the cluster's state ok on every running node", func() (bool, error) {
		for _, s := range c.Nodes {
			if !s.Running() {
				continue
			}
			info, err := command(ctx, s.Addr(), "CLUSTER", "INFO")
			if err != nil || !strings.Contains(info, "cluster_state:ok") || !strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(len(c.Nodes))) {
				return false, nil
			}
		}
		return true, nil
	})
}

// WaitDown returns once the running nodes say cluster_state:fail (a
// master they all know is down), or ctx ends.
func (c *Cluster) WaitDown(ctx context.Context) error {
	return geminitest.Poll(ctx, "the cluster's state fail", func() (bool, error) {
		for _, s := range c.Nodes {
			if !s.Running() {
				continue
			}
			info, err := command(ctx, s.Addr(), "CLUSTER", "INFO")
			if err != nil || !strings.Contains(info, "cluster_state:fail") {
				return false, nil
			}
		}
		return true, nil
	})
}

// Sentinel is a master, its replicas and the sentinels that watch it.
type Sentinel struct {
	t         testing.TB
	Name      string
	Master    *Server
	Replicas  []*Server
	Sentinels []*Server
}

// StartSentinel starts a master, replicas (at least one) replicating it
// and sentinels (quorum: a majority of them) watching it as "mymaster",
// all on loopback ports, and returns once the replicas are in sync and
// every sentinel knows them.
func StartSentinel(t testing.TB, replicas, sentinels int) *Sentinel {
	t.Helper()
	st := &Sentinel{t: t, Name: "mymaster"}
	st.Master = Start(t)
	for range replicas {
		s := &Server{t: t, bin: Binary(t), dir: t.TempDir()}
		master := st.Master.port
		s.extra = func(*Server) []string {
			return []string{"--appendonly", "no", "--replicaof", "127.0.0.1", strconv.Itoa(master)}
		}
		st.Replicas = append(st.Replicas, startWith(t, s))
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	if err := geminitest.Poll(ctx, "the replicas in sync", func() (bool, error) {
		info, err := command(ctx, st.Master.Addr(), "INFO", "replication")
		return err == nil && strings.Count(info, "state=online") == replicas, nil
	}); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	quorum := sentinels/2 + 1
	for range sentinels {
		s := &Server{t: t, bin: Binary(t), dir: t.TempDir()}
		s.conf = filepath.Join(s.dir, "sentinel.conf")
		conf := fmt.Sprintf("sentinel resolve-hostnames no\nsentinel monitor %s 127.0.0.1 %d %d\nsentinel down-after-milliseconds %[1]s 1000\nsentinel failover-timeout %[1]s 10000\n",
			st.Name, st.Master.port, quorum)
		if err := os.WriteFile(s.conf, []byte(conf), 0o600); err != nil {
			t.Fatalf("redistest: %v", err)
		}
		s.extra = func(*Server) []string { return []string{"--sentinel"} }
		// A sentinel logs no "Ready to accept connections": it listens
		// once it says what it monitors.
		s.ready = "+monitor master " + st.Name
		st.Sentinels = append(st.Sentinels, startWith(t, s))
	}
	if err := geminitest.Poll(ctx, "every sentinel knowing the replicas", func() (bool, error) {
		for _, s := range st.Sentinels {
			out, err := command(ctx, s.Addr(), "SENTINEL", "REPLICAS", st.Name)
			if err != nil || strings.Count(out, "flags\nslave\n") < replicas {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	return st
}

// URL is the redis+sentinel:// URL of the master's database db.
func (st *Sentinel) URL(db int) string {
	addrs := make([]string, len(st.Sentinels))
	for i, s := range st.Sentinels {
		addrs[i] = s.Addr()
	}
	return fmt.Sprintf("redis+sentinel://%s/%s?db=%d", strings.Join(addrs, ","), st.Name, db)
}

// MasterAddr is the master's host:port as the first sentinel names it.
func (st *Sentinel) MasterAddr(ctx context.Context) (string, error) {
	out, err := command(ctx, st.Sentinels[0].Addr(), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", st.Name)
	if err != nil {
		return "", err
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return "", fmt.Errorf("sentinel answered %q", out)
	}
	return f[0] + ":" + f[1], nil
}

// Failover has the sentinels promote a replica, and returns once every
// sentinel names it the master, it takes writes, and the old master
// replicates it. It returns the server that was the master (a replica
// now) and the new one.
func (st *Sentinel) Failover(ctx context.Context) (old, now *Server, err error) {
	before, err := st.MasterAddr(ctx)
	if err != nil {
		return nil, nil, err
	}
	if _, err := command(ctx, st.Sentinels[0].Addr(), "SENTINEL", "FAILOVER", st.Name); err != nil {
		return nil, nil, err
	}
	var addr string
	if err := geminitest.Poll(ctx, "a new master every sentinel names", func() (bool, error) {
		for _, s := range st.Sentinels {
			out, err := command(ctx, s.Addr(), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", st.Name)
			f := strings.Fields(out)
			if err != nil || len(f) != 2 || f[0]+":"+f[1] == before {
				return false, nil
			}
			addr = f[0] + ":" + f[1]
		}
		role, err := command(ctx, addr, "ROLE")
		return err == nil && strings.HasPrefix(role, "master"), nil
	}); err != nil {
		return nil, nil, err
	}
	for _, s := range append([]*Server{st.Master}, st.Replicas...) {
		switch s.Addr() {
		case before:
			old = s
		case addr:
			now = s
		}
	}
	if old == nil || now == nil {
		return nil, nil, fmt.Errorf("the sentinels name %s, none of this test's servers", addr)
	}
	// The switch is complete once the old master is a replica of the new
	// one: until then it still takes writes, which its resync from the
	// new master then drops.
	if err := geminitest.Poll(ctx, "the old master a replica of the new one", func() (bool, error) {
		info, err := command(ctx, old.Addr(), "INFO", "replication")
		return err == nil && strings.Contains(info, "role:slave") && strings.Contains(info, "master_port:"+strconv.Itoa(now.port)) &&
			strings.Contains(info, "master_link_status:up"), nil
	}); err != nil {
		return nil, nil, err
	}
	return old, now, nil
}

// command runs one command on the server at addr over a connection of
// its own and returns its answer as text (an array's items a line each).
func command(ctx context.Context, addr string, args ...string) (string, error) {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DisableIdentity: true, Protocol: 2,
		DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second})
	defer c.Close()
	a := make([]any, len(args))
	for i, s := range args {
		a[i] = s
	}
	v, err := c.Do(ctx, a...).Result()
	if err != nil {
		return "", err
	}
	return text(v), nil
}

func text(v any) string {
	switch v := v.(type) {
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = text(x)
		}
		return strings.Join(parts, "\n")
	case map[any]any:
		var parts []string
		for k, x := range v {
			parts = append(parts, text(k), text(x))
		}
		return strings.Join(parts, "\n")
	default:
		return fmt.Sprint(v)
	}
}

// Role returns the node's role: "master" or "slave".
func (s *Server) Role(ctx context.Context) (string, error) {
	out, err := command(ctx, s.Addr(), "ROLE")
	if err != nil {
		return "", err
	}
	role, _, _ := strings.Cut(out, "\n")
	return role, nil
}

// WaitReplicated returns once every replica of the master s has received
// all that s has written (their offsets equal its own), or ctx ends.
func (s *Server) WaitReplicated(ctx context.Context) error {
	return geminitest.Poll(ctx, "the replicas of "+s.Addr()+" in step", func() (bool, error) {
		info, err := command(ctx, s.Addr(), "INFO", "replication")
		if err != nil {
			return false, err
		}
		var master string
		var offsets []string
		for _, l := range strings.Split(info, "\n") {
			l = strings.TrimSpace(l)
			if v, ok := strings.CutPrefix(l, "master_repl_offset:"); ok {
				master = v
			}
			if strings.HasPrefix(l, "slave") && strings.Contains(l, "state=online") {
				_, off, _ := strings.Cut(l, ",offset=")
				off, _, _ = strings.Cut(off, ",")
				offsets = append(offsets, off)
			}
		}
		for _, off := range offsets {
			if off != master {
				return false, nil
			}
		}
		replicas := len(offsets)
		return master != "" && replicas > 0, nil
	})
}

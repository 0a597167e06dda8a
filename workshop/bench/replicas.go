package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// replicaClients is the number of MCP clients driving each topology of
// the replicas section.
const replicaClients = 16

// replicas runs the same Streamable HTTP load through HAProxy (the tested
// deploy/haproxy.cfg) to one replica and to three, all with --backend api,
// --stateless and one shared Redis, and measures the CPU per call of each
// process kind; then what a session and a turn cost in Redis memory.
func (b *bench) replicas(ctx context.Context) *section {
	s := &section{
		title: "Replicas: the same HTTP load through HAProxy to 1 and to 3 replicas on one Redis",
		intro: fmt.Sprintf("Three gemini-mcp-server processes with `--http 127.0.0.1:PORT --backend api --stateless --store redis://… --max-concurrent %d --drain-delay 0` "+
			"on one redis-server (`--save \"\" --appendonly no`), answering from internal/geminitest/fakeapi (in the bench process, one for all). "+
			"Two HAProxy processes run deploy/haproxy.cfg as it is: one with all three server lines on replica 1 (*1 replica*), one with a line per replica (*3 replicas*). "+
			"%d clients (Go SDK, Streamable HTTP, each its own session) call `chat` back to back for %s per topology per round through one balancer, then the other; "+
			"every call is a new session, so each writes its record and its turn to Redis. "+
			"Calls/s is per round (median, min–max); the latency percentiles pool every call. "+
			"CPU is user + system from /proc, summed over the rounds, for the replicas (all three, whichever topology), redis-server, the balancer in use, "+
			"and the bench process (the clients and the fake API).", replicaClients, replicaClients, fmtDur(b.cfg.httpTime.Seconds())),
	}
	redisBin, err1 := exec.LookPath("redis-server")
	haproxyBin, err2 := exec.LookPath("haproxy")
	switch {
	case err1 != nil:
		s.skipped = "no redis-server on PATH (install Redis 7 or later to run this section)"
		return s
	case err2 != nil:
		s.skipped = "no haproxy on PATH (install HAProxy 2.6 or later to run this section)"
		return s
	case !helpMentions(ctx, b.serverBin, "stateless"):
		s.skipped = "this build of gemini-mcp-server has no `--stateless` flag"
		return s
	}
	cleanup := &cleanups{}
	defer func() {
		if err := cleanup.run(); err != nil {
			s.notes = append(s.notes, "Note: "+oneLine(err.Error()))
		}
	}()
	rdb, redisPID, err := startRedis(ctx, redisBin, b.tmp, cleanup)
	if err != nil {
		s.failed = err
		return s
	}
	api := fakeapi.New()
	cleanup.add(func() error { api.Close(); return nil })

	// No calls are in flight when the section stops the replicas: they
	// need not wait for a balancer to notice (--drain-delay, 5 s each).
	var noDrain []string
	if helpMentions(ctx, b.serverBin, "drain-delay") {
		noDrain = []string{"--drain-delay", "0"}
	}
	var replicaPIDs []int
	var replicaAddrs []string
	for n := 1; n <= 3; n++ {
		sb, err := b.newSandbox(fmt.Sprintf("replica-%d", n), b.fakeDir)
		if err != nil {
			s.failed = err
			return s
		}
		sb.extraEnv = []string{"GEMINI_API_KEY=" + apiKey, "GOOGLE_GEMINI_BASE_URL=" + api.URL()}
		addr, err := freeLoopbackAddr()
		if err != nil {
			s.failed = err
			return s
		}
		flags := append(append([]string{}, b.cfg.serverFlags...), "--backend", "api", "--stateless",
			"--store", "redis://"+rdb.Options().Addr+"/0", "--max-concurrent", fmt.Sprint(replicaClients))
		flags = append(flags, noDrain...)
		pid, stop, err := startHTTPServer(ctx, b.serverBin, addr, sb, flags...)
		if err != nil {
			s.failed = err
			return s
		}
		cleanup.add(stop)
		replicaPIDs = append(replicaPIDs, pid)
		replicaAddrs = append(replicaAddrs, addr)
	}
	cfg := filepath.Join(b.root, "..", "deploy", "haproxy.cfg")
	type topo struct {
		name      string
		lbPID     int
		endpoint  string
		sessions  []*mcp.ClientSession
		rps, lat  series
		failed    int
		firstErr  error
		calls     float64
		cpu       struct{ replicas, redis, lb, bench float64 }
		replicaIn []string
	}
	topos := []*topo{
		{name: "1 replica", replicaIn: []string{replicaAddrs[0], replicaAddrs[0], replicaAddrs[0]}},
		{name: "3 replicas", replicaIn: replicaAddrs},
	}
	t := ours(b.serverBin, b.serverVersion, "gemini-mcp-server --backend api --stateless", backendAPI)
	for _, tp := range topos {
		pid, endpoint, err := startHAProxy(ctx, haproxyBin, cfg, tp.replicaIn, b.tmp, cleanup)
		if err != nil {
			s.failed = fmt.Errorf("%s: %w", tp.name, err)
			return s
		}
		tp.lbPID, tp.endpoint = pid, endpoint
		hc := &http.Client{Transport: &http.Transport{MaxIdleConns: 4 * replicaClients, MaxIdleConnsPerHost: 4 * replicaClients, IdleConnTimeout: time.Minute}}
		cleanup.add(func() error { hc.CloseIdleConnections(); return nil })
		for i := range replicaClients {
			client := mcp.NewClient(&mcp.Implementation{Name: "gemini-mcp-server-bench", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
			if err != nil {
				s.failed = fmt.Errorf("%s: connecting to %s: %w", tp.name, endpoint, err)
				return s
			}
			cleanup.add(func() error { cs.Close(); return nil })
			tp.sessions = append(tp.sessions, cs)
			m := marker("replwarm", 0, i)
			if _, err := callTool(ctx, cs, t, prompt(m), "", m, fakeCallTimeout); err != nil {
				s.failed = fmt.Errorf("%s: %w", tp.name, err)
				return s
			}
		}
	}

	// cpuNow reads what each kind of process has used so far.
	cpuNow := func(lbPID int) (replicas, redisCPU, lb, self float64, err error) {
		for _, p := range replicaPIDs {
			c, err := readCPU(p)
			if err != nil {
				return 0, 0, 0, 0, err
			}
			replicas += c.self + c.children
		}
		if redisCPU, _, err = ownCPU(redisPID); err != nil {
			return
		}
		if lb, _, err = ownCPU(lbPID); err != nil {
			return
		}
		self, _, err = ownCPU(os.Getpid())
		return
	}
	cpuOK := true
	for r := range b.cfg.rounds {
		fmt.Fprintf(b.log, "  round %d/%d\n", r+1, b.cfg.rounds)
		for _, tp := range topos {
			r0, d0, l0, b0, err0 := cpuNow(tp.lbPID)
			n, ls, elapsed, errs := httpBurst(ctx, tp.sessions, t, r, b.cfg.httpTime)
			r1, d1, l1, b1, err1 := cpuNow(tp.lbPID)
			if ctx.Err() != nil {
				s.failed = ctx.Err()
				return s
			}
			if cpuOK = cpuOK && errors.Join(err0, err1) == nil; cpuOK {
				tp.cpu.replicas += r1 - r0
				tp.cpu.redis += d1 - d0
				tp.cpu.lb += l1 - l0
				tp.cpu.bench += b1 - b0
				tp.calls += float64(n)
			}
			tp.failed += len(errs)
			if len(errs) > 0 && tp.firstErr == nil {
				tp.firstErr = errs[0]
			}
			tp.rps = append(tp.rps, float64(n)/elapsed.Seconds())
			tp.lat = append(tp.lat, ls...)
		}
	}
	mem := newTable("process", "VmRSS after the rounds", "peak (VmHWM)")
	for i, p := range replicaPIDs {
		if m, err := readMem(p); err == nil {
			mem.add(fmt.Sprintf("replica %d", i+1), fmtMB(m.rss), fmtMB(m.hwm))
		}
	}
	if m, err := readMem(redisPID); err == nil {
		mem.add("redis-server", fmtMB(m.rss), fmtMB(m.hwm))
	}
	tb := newTable("topology", "calls/s (median)", "min – max", "p50 latency", "p99 latency", "calls", "failed calls")
	var failed []string
	for _, tp := range topos {
		tb.add(tp.name, fmt.Sprintf("%.0f", tp.rps.median()), fmt.Sprintf("%.0f – %.0f", tp.rps.min(), tp.rps.max()),
			fmtDur(tp.lat.percentile(50)), fmtDur(tp.lat.percentile(99)), fmt.Sprint(len(tp.lat)), fmt.Sprint(tp.failed))
		if tp.failed > 0 {
			failed = append(failed, fmt.Sprintf("%s: %d calls failed; the first: %v", tp.name, tp.failed, tp.firstErr))
		}
	}
	s.table = tb
	if cpuOK {
		ms := func(sec, calls float64) string { return fmt.Sprintf("%.3f ms", 1000*sec/max(calls, 1)) }
		ct := newTable("topology", "replicas (sum)", "redis-server", "HAProxy", "bench process (clients + fake API)", "calls measured")
		for _, tp := range topos {
			ct.add(tp.name, ms(tp.cpu.replicas, tp.calls), ms(tp.cpu.redis, tp.calls), ms(tp.cpu.lb, tp.calls), ms(tp.cpu.bench, tp.calls), fmt.Sprintf("%.0f", tp.calls))
		}
		s.notes = append(s.notes, "CPU time per call (user + system, from /proc, summed over the rounds):\n\n"+ct.markdown())
		// The projection takes, for each kind of process, the larger CPU
		// per call of the two topologies: three replicas each with a third
		// of the calls spend more per call (each runtime's own work is
		// spread over fewer calls), and a replica on a larger machine may
		// run either way.
		per := func(f func(tp *topo) float64) float64 {
			return max(f(topos[0])/max(topos[0].calls, 1), f(topos[1])/max(topos[1].calls, 1))
		}
		s.notes = append(s.notes, projection(
			per(func(tp *topo) float64 { return tp.cpu.replicas }),
			per(func(tp *topo) float64 { return tp.cpu.redis }),
			per(func(tp *topo) float64 { return tp.cpu.lb }),
			topos[0].rps.median(), topos[1].rps.median()))
	}
	s.notes = append(s.notes, "Resident memory after the rounds (replica 1 served every call of the 1-replica rounds and a third of the others; "+
		"redis-server holds every session the rounds created):\n\n"+mem.markdown())
	if note, err := b.redisMemory(ctx, rdb, topos[1].sessions); err != nil {
		failed = append(failed, "Redis memory: "+err.Error())
	} else {
		s.notes = append(s.notes, note)
	}
	if len(failed) > 0 {
		s.failed = errors.New(strings.Join(failed, "; "))
	}
	return s
}

// projection is the text that turns CPU seconds per call into calls/s per
// core and per replica, with the arithmetic shown.
func projection(replicaSec, redisSec, lbSec, rps1, rps3 float64) string {
	perCore := 1 / replicaSec
	cores := runtime.NumCPU()
	var b strings.Builder
	fmt.Fprintf(&b, "**Projection.** This machine has %d CPUs, shared by the replicas, redis-server, HAProxy and the bench's own clients and fake API, "+
		"so three replicas share the CPUs the one had: what they serve here (%.0f calls/s through 3 replicas against %.0f through 1, ×%.2f) says nothing "+
		"of how they scale, only that spreading the calls costs little. What carries over to a larger machine is the CPU time per call "+
		"(of the two topologies, the larger for each process; HAProxy's health checks of /readyz, 12 a second in all here, are in it):\n\n", cores, rps3, rps1, rps3/rps1)
	fmt.Fprintf(&b, "- replica: %.3f ms of CPU per call → calls/s per core = 1 ÷ %.6f s = **%.0f**\n", replicaSec*1000, replicaSec, perCore)
	fmt.Fprintf(&b, "- redis-server: %.3f ms per call → one Redis core (Redis runs commands on one thread) serves up to 1 ÷ %.6f s = **%.0f calls/s**\n", redisSec*1000, redisSec, 1/redisSec)
	fmt.Fprintf(&b, "- HAProxy: %.3f ms per call → 1 ÷ %.6f s = %.0f calls/s per core\n", lbSec*1000, lbSec, 1/lbSec)
	for _, c := range []int{2, 4, 8, 16} {
		fmt.Fprintf(&b, "- a replica given %d cores (GOMAXPROCS %d): %d × %.0f = **%.0f calls/s** at full CPU; plan on 70%%: %.0f\n", c, c, c, perCore, float64(c)*perCore, 0.7*float64(c)*perCore)
	}
	fmt.Fprintf(&b, "\nThe fake API answers at once; a real call waits seconds for the Gemini API, which costs a replica memory while it waits, not CPU, "+
		"so these are bounds for CPU, and `--max-concurrent` bounds the calls in flight. "+
		"Redis is the shared part: at %.0f calls/s it is one core, whatever the number of replicas.", 1/redisSec)
	return b.String()
}

// redisMemory creates sessions of 2 KB prompts and 4 KB answers through
// the balancer and reads Redis's used_memory before and after: first n
// sessions of one turn each, then k-1 more turns in each.
func (b *bench) redisMemory(ctx context.Context, rdb *redis.Client, sessions []*mcp.ClientSession) (string, error) {
	n, k := 1000, 5
	if b.cfg.quick {
		n, k = 16, 2
	}
	const promptBytes, answerBytes = 2048, 4096
	t := ours(b.serverBin, b.serverVersion, "gemini-mcp-server --backend api --stateless", backendAPI)
	bigPrompt := func(m string) string {
		p := m + fmt.Sprintf(" [[bytes:%d]] ", answerBytes)
		return p + strings.Repeat("lorem ipsum ", (promptBytes-len(p))/12+1)[:promptBytes-len(p)]
	}
	field := func(name string) (float64, error) {
		info, err := rdb.Info(ctx, "memory").Result()
		if err != nil {
			return 0, err
		}
		sc := bufio.NewScanner(strings.NewReader(info))
		for sc.Scan() {
			if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), name+":"); ok {
				return strconv.ParseFloat(v, 64)
			}
		}
		return 0, fmt.Errorf("INFO memory has no %s", name)
	}
	used := func() (float64, error) { return field("used_memory") }
	ids := make([]string, n)
	// each runs f(i) for i in [0, n) on the clients, in parallel.
	each := func(f func(cs *mcp.ClientSession, i int) error) error {
		var wg sync.WaitGroup
		errs := make([]error, len(sessions))
		for w, cs := range sessions {
			wg.Go(func() {
				for i := w; i < n && errs[w] == nil && ctx.Err() == nil; i += len(sessions) {
					errs[w] = f(cs, i)
				}
			})
		}
		wg.Wait()
		return errors.Join(errors.Join(errs...), ctx.Err())
	}
	call := func(cs *mcp.ClientSession, tool string, args map[string]any, expect string) (*mcp.CallToolResult, error) {
		cctx, cancel := context.WithTimeout(ctx, fakeCallTimeout)
		defer cancel()
		res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", tool, err)
		}
		if text := resultText(res); res.IsError || !strings.Contains(text, expect) || len(text) < answerBytes {
			return nil, fmt.Errorf("%s: an error or not the answer to %q (%d bytes): %s", tool, expect, len(text), clip(text, 300))
		}
		return res, nil
	}
	before, err := used()
	if err != nil {
		return "", err
	}
	fmt.Fprintf(b.log, "  Redis memory: %d sessions\n", n)
	if err := each(func(cs *mcp.ClientSession, i int) error {
		m := marker("mem", 0, i)
		res, err := call(cs, t.Tool, map[string]any{"prompt": bigPrompt(m)}, m)
		if err != nil {
			return err
		}
		id, _ := res.Meta["sessionId"].(string)
		if id == "" {
			return errors.New("chat: no _meta.sessionId")
		}
		ids[i] = id
		return nil
	}); err != nil {
		return "", err
	}
	afterFirst, err := used()
	if err != nil {
		return "", err
	}
	fmt.Fprintf(b.log, "  Redis memory: %d more %s in each\n", k-1, plural(k-1, "turn"))
	for turn := 1; turn < k; turn++ {
		if err := each(func(cs *mcp.ClientSession, i int) error {
			m := marker("mem", turn, i)
			_, err := call(cs, "chat-reply", map[string]any{"prompt": bigPrompt(m), "sessionId": ids[i]}, m)
			return err
		}); err != nil {
			return "", err
		}
	}
	after, err := used()
	if err != nil {
		return "", err
	}
	rss, err := field("used_memory_rss")
	if err != nil {
		return "", err
	}
	perSession := (afterFirst - before) / float64(n)
	perTurn := (after - afterFirst) / float64(n*(k-1))
	mt := newTable("measure", "value")
	mt.add("used_memory before", fmtMB(before))
	mt.add(fmt.Sprintf("after %d sessions of 1 turn", n), fmtMB(afterFirst))
	mt.add(fmt.Sprintf("after %d more %s in each (%d turns each)", k-1, plural(k-1, "turn"), k), fmtMB(after))
	mt.add("used_memory_rss after", fmtMB(rss))
	mt.add("per session with its first turn", fmt.Sprintf("%.1f kB", perSession/1e3))
	mt.add("per further turn", fmt.Sprintf("%.1f kB", perTurn/1e3))
	mt.add(fmt.Sprintf("per 1,000 sessions of %d turns", k), fmtMB(1000*(perSession+float64(k-1)*perTurn)))
	return fmt.Sprintf("**Redis memory per session and per turn.** Through the 3-replica balancer, %d clients start %d sessions with `chat` "+
		"(a %d-byte prompt whose answer the fake API makes %d bytes long), then add %d %s to each with `chat-reply {sessionId}`; "+
		"Redis's `INFO memory` used_memory is read before, between and after (it counts the store's keys and Redis's own overhead per key, "+
		"not the allocator's fragmentation, which used_memory_rss adds):\n\n%s", len(sessions), n, promptBytes, answerBytes, k-1, plural(k-1, "turn"), mt.markdown()), nil
}

// plural is word, with an s unless n is 1.
func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// cleanups are the stops of a section's processes, run last first.
type cleanups struct{ fs []func() error }

func (c *cleanups) add(f func() error) { c.fs = append(c.fs, f) }

func (c *cleanups) run() error {
	var errs []error
	for i := len(c.fs) - 1; i >= 0; i-- {
		errs = append(errs, c.fs[i]())
	}
	c.fs = nil
	return errors.Join(errs...)
}

// startRedis runs redis-server on a free loopback port, without
// persistence, and returns a client and its pid once it answers PING.
func startRedis(ctx context.Context, bin, tmp string, c *cleanups) (*redis.Client, int, error) {
	dir, err := os.MkdirTemp(tmp, "redis-")
	if err != nil {
		return nil, 0, err
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, 0, err
	}
	_, port, _ := strings.Cut(addr, ":")
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--daemonize", "no", "--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	pid, err := startOwned(cmd, "redis-server", c)
	if err != nil {
		return nil, 0, err
	}
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	c.add(rdb.Close)
	if err := pollFor(ctx, 15*time.Second, "redis-server answering", func() (bool, error) { err := rdb.Ping(ctx).Err(); return err == nil, err }); err != nil {
		data, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
		return nil, 0, fmt.Errorf("redis-server did not answer PING: %w: %s", err, clip(string(data), -1000))
	}
	return rdb, pid, nil
}

// startHAProxy runs haproxy -db -f cfg with the three REPLICA addresses,
// and returns its pid and MCP endpoint once its statistics show all three
// servers UP.
func startHAProxy(ctx context.Context, bin, cfg string, replicas []string, tmp string, c *cleanups) (int, string, error) {
	listen, err := freeLoopbackAddr()
	if err != nil {
		return 0, "", err
	}
	stats, err := freeLoopbackAddr()
	if err != nil {
		return 0, "", err
	}
	logFile, err := os.CreateTemp(tmp, "haproxy-*.log")
	if err != nil {
		return 0, "", err
	}
	c.add(logFile.Close)
	cmd := exec.Command(bin, "-db", "-f", cfg)
	cmd.Env = append(os.Environ(), "LB_LISTEN="+listen, "LB_STATS="+stats)
	for i, r := range replicas {
		cmd.Env = append(cmd.Env, fmt.Sprintf("REPLICA%d=%s", i+1, r))
	}
	// HAProxy logs every request (option httplog) to stderr: a file
	// costs it the least, and is there if it fails.
	cmd.Stderr = logFile
	pid, err := startOwned(cmd, "haproxy", c)
	if err != nil {
		return 0, "", err
	}
	hc := &http.Client{Timeout: time.Second}
	up := func() bool {
		resp, err := hc.Get("http://" + stats + "/stats;csv")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		n := 0
		sc := bufio.NewScanner(io.LimitReader(resp.Body, 1<<20))
		for sc.Scan() {
			f := strings.Split(sc.Text(), ",")
			if len(f) > 17 && f[0] == "replicas" && strings.HasPrefix(f[1], "r") && f[17] == "UP" {
				n++
			}
		}
		return n == len(replicas)
	}
	if err := pollFor(ctx, 20*time.Second, "HAProxy's checks of the replicas", func() (bool, error) { return up(), nil }); err != nil {
		data, _ := os.ReadFile(logFile.Name())
		return 0, "", fmt.Errorf("HAProxy never had its servers UP: %w: %s", err, clip(string(data), -1000))
	}
	return pid, "http://" + listen + "/mcp", nil
}

// startOwned starts cmd in a process group of its own and adds its stop
// (SIGTERM, up to 10 s, then SIGKILL, then the group swept) to c.
func startOwned(cmd *exec.Cmd, name string, c *cleanups) (int, error) {
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("%s: %w", name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	c.add(func() error {
		defer killGroup(cmd.Process.Pid)
		_ = terminate(cmd.Process)
		select {
		case <-exited:
			return nil
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			return fmt.Errorf("%s did not exit within 10 s of SIGTERM; killed", name)
		}
	})
	return cmd.Process.Pid, nil
}

// pollFor is geminitest.Poll for at most d.
func pollFor(ctx context.Context, d time.Duration, what string, done func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return geminitest.Poll(ctx, what, done)
}

package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpLevels are the client concurrencies of the HTTP run.
var httpLevels = []int{1, 4, 16}

// http measures our server's Streamable HTTP transport (--http ADDR, at
// /mcp): calls per second and latency percentiles at a few client
// concurrencies, with the instant fake. The peers serve stdio only.
func (b *bench) http(ctx context.Context) *section {
	maxLevel := httpLevels[len(httpLevels)-1]
	s := &section{
		title: "HTTP: `tools/call` throughput and latency (Streamable HTTP, instant fake CLI)",
		intro: fmt.Sprintf("gemini-mcp-server (default backend) with `--http 127.0.0.1:PORT --max-concurrent %d` (and any -server-flags), driven by the Go SDK's Streamable HTTP client at `/mcp`. "+
			"*c* clients, each its own MCP session (no standalone SSE stream), call `chat` back to back for %s per round; rounds interleave the concurrencies. "+
			"Calls/s is per round (median, min–max); the latency percentiles pool every call of every round. The peers serve stdio only. "+
			"The ceiling is a go-sdk server whose `chat` only echoes its prompt (Streamable HTTP, stateful, in a process of its own, the bench executable), driven the same way in the same rounds.", maxLevel, fmtDur(b.cfg.httpTime.Seconds())),
	}
	if !helpMentions(ctx, b.serverBin, "http") {
		s.skipped = "this build of gemini-mcp-server has no `--http` flag (`gemini-mcp-server --help` does not list it)"
		return s
	}
	t := b.targets()[0]
	if t.oneshot() {
		s.intro += " Each call execs the fake CLI, so on a small machine the process starts, not HTTP, set the ceiling."
	} else {
		s.intro += fmt.Sprintf(" The default backend (%s) answers from long-lived processes, so no process start per call.", t.Backend)
	}
	sb, err := b.newSandbox("http-ours", b.fakeDir)
	if err != nil {
		s.failed = err
		return s
	}
	addr, err := freeLoopbackAddr()
	if err != nil {
		s.failed = err
		return s
	}
	pid, stop, err := startHTTPServer(ctx, b.serverBin, addr, sb, append(append([]string{}, b.cfg.serverFlags...), "--max-concurrent", fmt.Sprint(maxLevel))...)
	if err != nil {
		s.failed = err
		return s
	}
	defer func() {
		if err := stop(); err != nil {
			s.notes = append(s.notes, "Note: "+oneLine(err.Error()))
		}
	}()

	hc := &http.Client{Transport: &http.Transport{MaxIdleConns: 8 * maxLevel, MaxIdleConnsPerHost: 4 * maxLevel, IdleConnTimeout: time.Minute}}
	defer hc.CloseIdleConnections()
	connect := func(endpoint string) ([]*mcp.ClientSession, error) {
		sessions := make([]*mcp.ClientSession, maxLevel)
		for i := range sessions {
			client := mcp.NewClient(&mcp.Implementation{Name: "gemini-mcp-server-bench", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
			if err != nil {
				return sessions, fmt.Errorf("connecting to %s: %w", endpoint, err)
			}
			sessions[i] = cs
			m := marker("warm", 0, i)
			if _, err := callTool(ctx, cs, t, prompt(m), "", m, fakeCallTimeout); err != nil {
				return sessions, err
			}
		}
		return sessions, nil
	}
	closeAll := func(sessions []*mcp.ClientSession) {
		for _, cs := range sessions {
			if cs != nil {
				cs.Close()
			}
		}
	}
	sessions, err := connect("http://" + addr + "/mcp")
	defer closeAll(sessions)
	if err != nil {
		s.failed = err
		return s
	}
	// The ceiling: a no-op go-sdk server, measured in the same rounds.
	noopEndpoint, noopPID, stopNoop, err := startNoopServer(ctx)
	if err != nil {
		s.failed = err
		return s
	}
	defer func() {
		if err := stopNoop(); err != nil {
			s.notes = append(s.notes, "Note: "+oneLine(err.Error()))
		}
	}()
	noopSessions, err := connect(noopEndpoint)
	defer closeAll(noopSessions)
	if err != nil {
		s.failed = err
		return s
	}
	noopRPS := make([]series, len(httpLevels))
	// CPU seconds per level, summed over the rounds: our server's own, its
	// gemini processes', the bench process's while it drives our server
	// (the client), the no-op server's and the bench process's while it
	// drives the no-op server.
	cpu := make([]struct{ server, backend, client, noop, noopClient, calls, noopCalls float64 }, len(httpLevels))
	cpuOK := true

	rps := make([]series, len(httpLevels))
	lat := make([]series, len(httpLevels))
	failures := make([]int, len(httpLevels))
	var firstErr error
	for r := range b.cfg.rounds {
		fmt.Fprintf(b.log, "  round %d/%d\n", r+1, b.cfg.rounds)
		for li, c := range httpLevels {
			if err := sb.resetFake(); err != nil {
				s.failed = err
				return s
			}
			srv0, err0 := readCPU(pid)
			cli0, _, err1 := ownCPU(os.Getpid())
			n, ls, elapsed, errs := httpBurst(ctx, sessions[:c], t, r, b.cfg.httpTime)
			srv1, err2 := readCPU(pid)
			cli1, _, err3 := ownCPU(os.Getpid())
			if cpuOK = cpuOK && errors.Join(err0, err1, err2, err3) == nil; cpuOK {
				d := srv1.minus(srv0)
				cpu[li].server += d.self
				cpu[li].backend += d.children
				cpu[li].client += cli1 - cli0
				cpu[li].calls += float64(n)
			}
			if ctx.Err() != nil {
				s.failed = ctx.Err()
				return s
			}
			failures[li] += len(errs)
			if len(errs) > 0 && firstErr == nil {
				firstErr = errs[0]
			}
			rps[li] = append(rps[li], float64(n)/elapsed.Seconds())
			lat[li] = append(lat[li], ls...)
			noop0, _, err0 := ownCPU(noopPID)
			cli0, _, err1 = ownCPU(os.Getpid())
			n, _, elapsed, errs = httpBurst(ctx, noopSessions[:c], t, r, b.cfg.httpTime)
			noop1, _, err2 := ownCPU(noopPID)
			cli1, _, err3 = ownCPU(os.Getpid())
			if cpuOK = cpuOK && errors.Join(err0, err1, err2, err3) == nil; cpuOK {
				cpu[li].noop += noop1 - noop0
				cpu[li].noopClient += cli1 - cli0
				cpu[li].noopCalls += float64(n)
			}
			if len(errs) > 0 {
				s.failed = fmt.Errorf("the no-op server failed %d calls; the first: %w", len(errs), errs[0])
				return s
			}
			noopRPS[li] = append(noopRPS[li], float64(n)/elapsed.Seconds())
		}
	}
	tb := newTable("client concurrency", "calls/s (median)", "min – max", "p50 latency", "p99 latency", "calls", "failed calls", "no-op go-sdk server: calls/s (ceiling)", "ours ÷ ceiling")
	total := 0
	for li, c := range httpLevels {
		tb.add(fmt.Sprint(c), fmt.Sprintf("%.0f", rps[li].median()), fmt.Sprintf("%.0f – %.0f", rps[li].min(), rps[li].max()),
			fmtDur(lat[li].percentile(50)), fmtDur(lat[li].percentile(99)), fmt.Sprint(len(lat[li])), fmt.Sprint(failures[li]),
			fmt.Sprintf("%.0f", noopRPS[li].median()), fmt.Sprintf("%.2f", rps[li].median()/noopRPS[li].median()))
		total += failures[li]
	}
	s.table = tb
	top := len(httpLevels) - 1
	ratio := rps[top].median() / noopRPS[top].median()
	bound := ""
	cpuVerdict := verdict{goal: fmt.Sprintf("HTTP `tools/call`, %d clients: our server's CPU per call ≤ 1.6× the no-op go-sdk server's", maxLevel),
		measured: "not measured: /proc could not be read"}
	if cpuOK {
		perCall := func(sec, calls float64) string { return fmt.Sprintf("%.3f ms", 1000*sec/max(calls, 1)) }
		ct := newTable("client concurrency", "our server", "its gemini processes (fake CLI)", "MCP client (bench process), driving ours", "no-op go-sdk server", "MCP client (bench process), driving the no-op", "our server ÷ no-op server")
		for li, c := range httpLevels {
			l := cpu[li]
			ct.add(fmt.Sprint(c), perCall(l.server, l.calls), perCall(l.backend, l.calls), perCall(l.client, l.calls),
				perCall(l.noop, l.noopCalls), perCall(l.noopClient, l.noopCalls),
				fmt.Sprintf("%.2f", (l.server/max(l.calls, 1))/max(l.noop/max(l.noopCalls, 1), 1e-9)))
		}
		s.notes = append(s.notes, "CPU time per call (user + system, from /proc, summed over the rounds; each server runs in a process of its own). "+
			"Our server's excludes its gemini processes (the fake CLI, standing in for the Gemini CLI), shown apart. "+
			"On a machine of N CPUs, no server driven by this client against this fake CLI can exceed N ÷ (client + fake CLI) calls per second:\n\n"+ct.markdown())
		l := cpu[top]
		ours, noop := 1000*l.server/max(l.calls, 1), 1000*l.noop/max(l.noopCalls, 1)
		client, fake, noopClient := 1000*l.client/max(l.calls, 1), 1000*l.backend/max(l.calls, 1), 1000*l.noopClient/max(l.noopCalls, 1)
		s.notes = append(s.notes, fmt.Sprintf("**Bound at %d clients.** When the CPUs are the limit, calls per second go as 1 ÷ the CPU time of a call, everything counted. "+
			"A server costing exactly what the no-op server costs (%.3f ms a call) would still reach at most %.2f× the no-op's calls/s here: "+
			"the client (%.3f ms) and the fake CLI (%.3f ms) spend %.3f ms on each of its calls, where the no-op's calls cost the client %.3f ms. "+
			"Past it: more CPUs than the client, the CLI and the server keep busy (then latency, not CPU, sets calls/s).",
			maxLevel, noop, (noopClient+noop)/max(client+fake+noop, 1e-9), client, fake, client+fake, noopClient))
		bound = fmt.Sprintf("; at most %.2f× for any server here, see the bound", (noopClient+noop)/max(client+fake+noop, 1e-9))
		cpuVerdict = verdict{
			goal: cpuVerdict.goal,
			measured: fmt.Sprintf("%.2f× (%.3f vs %.3f ms a call; its fake CLI %.3f ms a call besides)", ours/max(noop, 1e-9), ours, noop,
				1000*l.backend/max(l.calls, 1)),
			limit: fmt.Sprintf("no-op go-sdk server: %.3f ms a call", noop),
			met:   ours <= 1.6*noop, known: true,
		}
	}
	b.rep.verdicts = append(b.rep.verdicts, verdict{
		goal:     fmt.Sprintf("HTTP `tools/call`, %d clients: calls/s ≥ 0.6× the no-op go-sdk server's", maxLevel),
		measured: fmt.Sprintf("%.2f× (%.0f vs %.0f calls/s, medians of %d rounds%s)", ratio, rps[top].median(), noopRPS[top].median(), len(rps[top]), bound),
		limit:    fmt.Sprintf("no-op go-sdk server: %.0f calls/s", noopRPS[top].median()),
		met:      ratio >= 0.6, known: true,
	}, cpuVerdict)
	if total > 0 {
		s.failed = fmt.Errorf("%d calls failed; the first: %w", total, firstErr)
	}
	return s
}

// httpBurst has each session call chat back to back until d has passed,
// and returns the calls that succeeded, their latencies, the time until the
// last call ended, and the errors of those that failed.
func httpBurst(ctx context.Context, sessions []*mcp.ClientSession, t *target, round int, d time.Duration) (int, series, time.Duration, []error) {
	var (
		mu   sync.Mutex
		lat  series
		errs []error
		wg   sync.WaitGroup
	)
	start := time.Now()
	deadline := start.Add(d)
	for w, cs := range sessions {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				m := marker(fmt.Sprintf("http%d-w%d", len(sessions), w), round, i)
				dur, err := callTool(ctx, cs, t, prompt(m), "", m, fakeCallTimeout)
				mu.Lock()
				if err != nil {
					// Counted, not fatal: a server that fails some calls
					// under load should show how many.
					errs = append(errs, err)
				} else {
					lat = append(lat, dur.Seconds())
				}
				mu.Unlock()
				if ctx.Err() != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return len(lat), lat, time.Since(start), errs
}

// freeLoopbackAddr picks a free port on 127.0.0.1. Another process could
// take it before the server binds it; the server would then fail to start
// and say so.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}

// startHTTPServer starts our server with --http addr and waits until
// /healthz answers. stop sends SIGTERM, waits up to 10 s (then kills),
// and sweeps the process group.
func startHTTPServer(ctx context.Context, bin, addr string, sb *sandbox, extra ...string) (pid int, stop func() error, err error) {
	stderr, err := os.CreateTemp(sb.root, "stderr-*.log")
	if err != nil {
		return 0, nil, err
	}
	args := append([]string{"--http", addr, "--state-dir", sb.state}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Dir = sb.work
	cmd.Env = sb.env(nil)
	cmd.Stderr = stderr
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		stderr.Close()
		return 0, nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop = func() error {
		defer stderr.Close()
		defer killGroup(cmd.Process.Pid)
		if err := terminate(cmd.Process); err != nil {
			return <-exited
		}
		select {
		case err := <-exited:
			if err != nil {
				return fmt.Errorf("gemini-mcp-server --http exited with %w after SIGTERM", err)
			}
			return nil
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			return errors.New("gemini-mcp-server --http did not exit within 10 s of SIGTERM; killed")
		}
	}
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := hc.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return cmd.Process.Pid, stop, nil
			}
		}
		select {
		case werr := <-exited:
			exited <- werr // let stop see it too
			data, _ := os.ReadFile(stderr.Name())
			stop()
			return 0, nil, fmt.Errorf("gemini-mcp-server --http %s exited before serving (%w): %s", addr, werr, clip(string(data), -2000))
		case <-ctx.Done():
			stop()
			return 0, nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return 0, nil, fmt.Errorf("gemini-mcp-server --http %s: /healthz did not answer within 15 s", addr)
		}
	}
}

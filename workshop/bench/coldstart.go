package main

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// coldStart measures from just before the process starts to the answer of
// the first tools/list: start-up plus the initialize handshake plus one
// request, which is the least any client waits before it can call a tool.
func (b *bench) coldStart(ctx context.Context) *section {
	s := &section{
		title: "Cold start: process start to the first `tools/list` answer",
		intro: "A new process per round and target: exec, the `initialize` handshake, then `tools/list`, timed by the client from just before the exec. " +
			"The server is then closed (stdin closed) and waited for before the next one starts. " +
			"The no-op go-sdk server (bench/noopserver: the SDK's stdio transport and one chat tool that echoes its prompt) is a target of the same rounds: " +
			"what the Go runtime and the SDK alone cost, the limit our server's start is judged against. " +
			"Reference rows, measured in the same rounds: exec and exit of an empty Go program and of `node -e 0` (the floor of this machine), " +
			"and `gemini-mcp-server --version`, which exits after the Go runtime's start and every package's initialisation, before any of the server's own work: the floor of this binary.",
	}
	targets := append(b.stdioTargets(), noopTarget(b.noopServer))
	noop := len(targets) - 1
	sbs := make([]*sandbox, len(targets))
	for i, t := range targets {
		sb, err := b.newSandbox("cold-"+t.Name, b.fakeDir)
		if err != nil {
			s.failed = err
			return s
		}
		sbs[i] = sb
	}
	one := func(i int) (time.Duration, error) {
		start := time.Now()
		srv, _, err := startStdio(ctx, targets[i], sbs[i])
		if err != nil {
			return 0, err
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		res, err := srv.cs.ListTools(cctx, nil)
		d := time.Since(start)
		cancel()
		cerr := srv.close()
		if err != nil {
			return 0, fmt.Errorf("%s: tools/list: %w", targets[i].Name, err)
		}
		if !slices.ContainsFunc(res.Tools, func(t *mcp.Tool) bool { return t.Name == targets[i].Tool }) {
			return 0, fmt.Errorf("%s: tools/list lacks %q", targets[i].Name, targets[i].Tool)
		}
		if cerr != nil {
			fmt.Fprintf(b.log, "  %v\n", cerr)
		}
		return d, nil
	}
	// One unmeasured start each, so that the binaries and Node's modules
	// are in the page cache for every target alike.
	for i := range targets {
		if _, err := one(i); err != nil {
			s.failed = err
			return s
		}
	}
	// The floors: exec to exit of programs that do nothing.
	type floor struct {
		name string
		argv []string
		s    series
	}
	floors := []*floor{
		{name: "floor: empty Go program (exec to exit)", argv: []string{b.noop}},
		{name: "floor: `gemini-mcp-server --version` (exec to exit)", argv: []string{b.serverBin, "--version"}},
	}
	if b.node != "" {
		floors = append(floors, &floor{name: "floor: `node -e 0` (exec to exit)", argv: []string{b.node, "-e", "0"}})
	}
	per := make([]series, len(targets))
	for r := range b.cfg.rounds {
		fmt.Fprintf(b.log, "  round %d/%d\n", r+1, b.cfg.rounds)
		for _, f := range floors {
			d, err := execToExit(ctx, f.argv, sbs[0])
			if err != nil {
				s.failed = err
				return s
			}
			f.s = append(f.s, d.Seconds())
		}
		for i := range targets {
			d, err := one(i)
			if err != nil {
				s.failed = err
				return s
			}
			per[i] = append(per[i], d.Seconds())
		}
	}
	t := newTable("target", "start → tools/list (median)", "min – max", "× ours", "× no-op")
	oursMed, noopMed := per[0].median(), per[noop].median()
	for i, tg := range targets {
		t.add(tg.Name, fmtDur(per[i].median()), fmtRange(per[i], fmtDur), fmtRatio(per[i].median(), oursMed), fmtRatio(per[i].median(), noopMed))
	}
	for _, f := range floors {
		t.add(f.name, fmtDur(f.s.median()), fmtRange(f.s, fmtDur), fmtRatio(f.s.median(), oursMed), fmtRatio(f.s.median(), noopMed))
	}
	s.table = t
	// The ratio of the medians, and the median of the rounds' own ratios
	// (each round starts both within a few milliseconds, so a round's
	// ratio sees the same machine).
	var rounds series
	for r := range per[0] {
		rounds = append(rounds, per[0][r]/per[noop][r])
	}
	ratio := oursMed / noopMed
	b.rep.verdicts = append(b.rep.verdicts, verdict{
		goal: fmt.Sprintf("cold start to tools/list ≤ %.1f× the no-op go-sdk server", coldLimit),
		measured: fmt.Sprintf("%.2f× (%s vs %s; the rounds' own ratios: median %.2f×, %s); `--version` alone, package init and no serving, takes %s: %.2f× the no-op's whole start",
			ratio, fmtDur(oursMed), fmtDur(noopMed), rounds.median(), fmtRange(rounds, func(v float64) string { return fmt.Sprintf("%.2f×", v) }),
			fmtDur(floors[1].s.median()), floors[1].s.median()/noopMed),
		limit: fmt.Sprintf("%s: %s (min–max %s)", noopName, fmtDur(noopMed), fmtRange(per[noop], fmtDur)),
		met:   ratio <= coldLimit, known: true,
	})
	return s
}

// coldLimit is the cold-start target: our server's start to the first
// tools/list answer within this many times the no-op go-sdk server's.
const coldLimit = 1.3

// execToExit runs argv with stdin /dev/null and times it from start to
// exit.
func execToExit(ctx context.Context, argv []string, sb *sandbox) (time.Duration, error) {
	d, _, err := execPeak(ctx, argv, sb)
	return d, err
}

// execPeak runs argv with stdin /dev/null and returns the time from start
// to exit and its peak resident set in bytes (0 where the system does not
// say).
func execPeak(ctx context.Context, argv []string, sb *sandbox) (time.Duration, float64, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = sb.work
	cmd.Env = sb.env(nil)
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	return d, peakRSS(cmd.ProcessState), nil
}

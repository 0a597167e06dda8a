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
			"Two reference rows, measured in the same rounds, show the floor of this machine: exec and exit of an empty Go program, and of `node -e 0`.",
	}
	targets := b.stdioTargets()
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
	floors := []*floor{{name: "floor: empty Go program (exec to exit)", argv: []string{b.noop}}}
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
	t := newTable("target", "start → tools/list (median)", "min – max", "× ours")
	oursMed := per[0].median()
	for i, tg := range targets {
		t.add(tg.Name, fmtDur(per[i].median()), fmtRange(per[i], fmtDur), fmtRatio(per[i].median(), oursMed))
	}
	for _, f := range floors {
		t.add(f.name, fmtDur(f.s.median()), fmtRange(f.s, fmtDur), fmtRatio(f.s.median(), oursMed))
	}
	s.table = t
	b.rep.verdicts = append(b.rep.verdicts, verdict{
		goal:     "cold start to tools/list ≤ 10 ms",
		measured: fmt.Sprintf("%s (min–max %s; an empty Go program takes %s here)", fmtDur(oursMed), fmtRange(per[0], fmtDur), fmtDur(floors[0].s.median())),
		met:      oursMed <= 0.010, known: true,
	})
	return s
}

// execToExit runs argv with stdin /dev/null and times it from start to
// exit.
func execToExit(ctx context.Context, argv []string, sb *sandbox) (time.Duration, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = sb.work
	cmd.Env = sb.env(nil)
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", strings.Join(argv, " "), err)
	}
	return d, nil
}

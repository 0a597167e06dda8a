package main

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

const (
	e2eModel       = "gemini-2.5-flash"
	e2eCallTimeout = 3 * time.Minute
)

// e2e makes one call at a time through each server with the real Gemini
// CLI, which talks to a fake Gemini API on 127.0.0.1 (one per target, so
// that requests can be counted per server).
func (b *bench) e2e(ctx context.Context) *section {
	s := &section{
		title: "End to end: one call with the real Gemini CLI against a local fake Gemini API",
		intro: fmt.Sprintf("One `tools/call` per target per round, through the real CLI (Node.js), which talks to internal/geminitest/fakeapi on 127.0.0.1 "+
			"(API-key auth, no telemetry, no update checks; settings as in the e2e suite). Every target is given `model: %s`, so no server's CLI asks the model router first. "+
			"One unmeasured call per server first. *CPU per call* is the user+system time of the server and of the CLI runs it reaped (Node's start-up is most of it), "+
			"which depends far less than wall time on other load on the machine; for the warm backend it includes its long-lived `gemini --acp` processes. "+
			"*RSS* is the server's and all its processes' at the end (the warm backend's `gemini --acp` processes stay). "+
			"The row for our non-default backend is informational; the verdicts are about the default.", e2eModel),
	}
	if b.realCLI == "" {
		s.skipped = b.realWhy
		b.rep.verdicts = append(b.rep.verdicts, verdict{goal: "one end-to-end call ≤ 0.7× the fastest peer's", measured: "skipped: " + b.realWhy})
		return s
	}
	targets := b.stdioTargets()
	var fl fleet
	defer closeFleet(&fl, s, b.log)
	servers := make([]*server, len(targets))
	apis := make([]*fakeapi.Server, len(targets))
	defer func() {
		for _, a := range apis {
			if a != nil {
				a.Close()
			}
		}
	}()
	calls := make([]int, len(targets))
	for i, t := range targets {
		apis[i] = fakeapi.New()
		sb, err := newRealCLISandbox(b.tmp, "e2e-"+t.Name, b.realDir, apis[i].URL())
		if err != nil {
			s.failed = err
			return s
		}
		srv, _, err := startStdio(ctx, t, sb)
		if err != nil {
			s.failed = err
			return s
		}
		servers[i] = fl.add(srv)
		m := marker("e2ewarm", 0, i)
		fmt.Fprintf(b.log, "  warm-up call: %s\n", t.Name)
		if _, err := srv.call(ctx, prompt(m), e2eModel, m, e2eCallTimeout); err != nil {
			s.failed = err
			return s
		}
		calls[i]++
	}
	per := make([]series, len(targets))
	cpu0, err := cpuOf(servers)
	if err != nil {
		s.failed = err
		return s
	}
	for r := range b.cfg.rounds {
		fmt.Fprintf(b.log, "  round %d/%d\n", r+1, b.cfg.rounds)
		for i, srv := range servers {
			m := marker("e2e", r, i)
			d, err := srv.call(ctx, prompt(m), e2eModel, m, e2eCallTimeout)
			if err != nil {
				s.failed = err
				return s
			}
			calls[i]++
			per[i] = append(per[i], d.Seconds())
		}
	}
	cpu1, err := cpuOf(servers)
	if err != nil {
		s.failed = err
		return s
	}
	rss := make([]float64, len(servers))
	for i, srv := range servers {
		m, err := readMem(srv.pid())
		if err != nil {
			s.failed = err
			return s
		}
		rss[i] = m.rss + descendantsRSS(srv.pid())
	}
	t := newTable("target", "one call (median)", "min – max", "× ours", "CPU per call (server + CLI)", "RSS: server + children", "API requests per call")
	oursMed := per[0].median()
	fastestPeer, fastestName := math.Inf(1), ""
	for i, tg := range targets {
		used := cpu1[i].minus(cpu0[i])
		t.add(tg.Name, fmtDur(per[i].median()), fmtRange(per[i], fmtDur), fmtRatio(per[i].median(), oursMed),
			fmtDur((used.self+used.children)/float64(b.cfg.rounds)), fmtMB(rss[i]),
			fmt.Sprintf("%.2f", float64(len(apis[i].Requests()))/float64(calls[i])))
		if !tg.Ours && per[i].median() < fastestPeer {
			fastestPeer, fastestName = per[i].median(), tg.Name
		}
	}
	s.table = t
	v := verdict{goal: "one end-to-end call ≤ 0.7× the fastest peer's"}
	if fastestName == "" {
		v.measured = fmt.Sprintf("%s; no peers measured", fmtDur(oursMed))
	} else {
		v.known = true
		v.met = oursMed <= 0.7*fastestPeer
		v.measured = fmt.Sprintf("%s = %.2f× %s's %s (0.7× would be %s)", fmtDur(oursMed), oursMed/fastestPeer, fastestName, fmtDur(fastestPeer), fmtDur(0.7*fastestPeer))
	}
	b.rep.verdicts = append(b.rep.verdicts, v)
	for i, tg := range targets {
		if i > 0 && tg.Ours && fastestName != "" {
			m := per[i].median()
			b.rep.verdicts = append(b.rep.verdicts, verdict{
				goal:     fmt.Sprintf("the same, with `--backend %s` (information)", tg.Backend),
				measured: fmt.Sprintf("%s = %.2f× %s's %s", fmtDur(m), m/fastestPeer, fastestName, fmtDur(fastestPeer)),
				met:      m <= 0.7*fastestPeer, known: true,
			})
		}
	}
	return s
}

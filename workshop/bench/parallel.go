package main

import (
	"context"
	"fmt"
	"sync"
	"time"
)

const (
	parallelCalls = 16
	parallelSleep = time.Second
)

// parallel sends 16 calls at once, each answered by the fake after 1 s,
// and times the batch from the first request to the last answer. Our
// server runs with --max-concurrent 16 (its default is 4); the peers have
// no limit.
func (b *bench) parallel(ctx context.Context) *section {
	s := &section{
		title: fmt.Sprintf("Parallelism: %d concurrent calls, each taking %s in the CLI", parallelCalls, fmtDur(parallelSleep.Seconds())),
		intro: fmt.Sprintf("%d `tools/call`s sent at once on one session; the fake sleeps %s before answering (`[[sleep:%d]]`). "+
			"Wall time from the first request to the last answer; the ideal is %s. "+
			"gemini-mcp-server runs with `--max-concurrent %d`; the peers have no limit of their own.",
			parallelCalls, fmtDur(parallelSleep.Seconds()), parallelSleep.Milliseconds(), fmtDur(parallelSleep.Seconds()), parallelCalls),
	}
	targets := b.stdioTargets("--max-concurrent", fmt.Sprint(parallelCalls))
	var fl fleet
	defer closeFleet(&fl, s, b.log)
	servers := make([]*server, len(targets))
	for i, t := range targets {
		sb, err := b.newSandbox("parallel-"+t.Name, b.fakeDir)
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
		m := marker("warm", 0, 0)
		if _, err := srv.call(ctx, prompt(m), "", m, fakeCallTimeout); err != nil {
			s.failed = err
			return s
		}
	}
	batch := func(srv *server, r int) (time.Duration, error) {
		var wg sync.WaitGroup
		errs := make([]error, parallelCalls)
		start := time.Now()
		for i := range parallelCalls {
			wg.Go(func() {
				m := marker("par", r, i)
				p := fmt.Sprintf("%s [[sleep:%d]] what is the capital of France?", m, parallelSleep.Milliseconds())
				_, errs[i] = srv.call(ctx, p, "", m, fakeCallTimeout)
			})
		}
		wg.Wait()
		d := time.Since(start)
		for _, err := range errs {
			if err != nil {
				return d, err
			}
		}
		return d, nil
	}
	per := make([]series, len(targets))
	for r := range b.cfg.rounds {
		fmt.Fprintf(b.log, "  round %d/%d\n", r+1, b.cfg.rounds)
		for i, srv := range servers {
			if err := srv.sb.resetFake(); err != nil {
				s.failed = err
				return s
			}
			d, err := batch(srv, r)
			if err != nil {
				s.failed = err
				return s
			}
			per[i] = append(per[i], d.Seconds())
		}
	}
	t := newTable("target", fmt.Sprintf("%d × %s, wall (median)", parallelCalls, fmtDur(parallelSleep.Seconds())), "min – max", "over ideal", "× ours")
	oursMed := per[0].median()
	for i, tg := range targets {
		name := tg.Name
		if tg.Ours {
			name += fmt.Sprintf(", --max-concurrent %d", parallelCalls)
		}
		t.add(name, fmtDur(per[i].median()), fmtRange(per[i], fmtDur), fmtSignedDur(per[i].median()-parallelSleep.Seconds()), fmtRatio(per[i].median(), oursMed))
	}
	s.table = t
	b.rep.verdicts = append(b.rep.verdicts, verdict{
		goal:     fmt.Sprintf("%d × %s calls ≤ 1.3 s with --max-concurrent %d", parallelCalls, fmtDur(parallelSleep.Seconds()), parallelCalls),
		measured: fmt.Sprintf("%s (min–max %s)", fmtDur(oursMed), fmtRange(per[0], fmtDur)),
		met:      oursMed <= 1.3, known: true,
	})
	return s
}

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// firstPause is how long after the handshake the first chat comes: a
// client's own start-up, and the user's first question, take at least
// this long.
const firstPause = 3 * time.Second

// firstChat measures what a user waits for on the first chat after the
// server starts, with the real CLI against the fake API: our default
// server, which starts a warm process once the client has connected,
// against the same server with --warm-on-connect=false, which starts it at
// the first chat; and, as the limit, a warm chat once both are running.
func (b *bench) firstChat(ctx context.Context) *section {
	rounds := b.cfg.rounds
	if b.cfg.quick {
		rounds = 1 // each round starts the real CLI twice and waits
	}
	s := &section{
		title: "First chat: the first `chat` " + firstPause.String() + " after the client connects, real Gemini CLI against a local fake Gemini API",
		intro: fmt.Sprintf("Our server alone (default backend), a new process each round, %d rounds with the two settings interleaved: "+
			"connect (the MCP handshake) and list the tools, wait %v, then time one new `chat`; the *limit* is a second new `chat` in the same process, back to back. "+
			"With `--warm-on-connect` (the default) the warm process starts when the client connects; with `--warm-on-connect=false` the first chat waits for its start.",
			rounds, firstPause),
	}
	if b.realCLI == "" {
		s.skipped = b.realWhy
		return s
	}
	api := fakeapi.New()
	defer api.Close()
	type variant struct {
		name        string
		extra       []string
		first, next series
	}
	vs := []*variant{{name: "`--warm-on-connect` (default)"}, {name: "`--warm-on-connect=false`", extra: []string{"--warm-on-connect=false"}}}
	for r := range rounds {
		for i, v := range vs {
			sb, err := newRealCLISandbox(b.tmp, fmt.Sprintf("first-%d-%d", r, i), b.realDir, api.URL())
			if err != nil {
				s.failed = err
				return s
			}
			srv, _, err := startStdio(ctx, b.targets(v.extra...)[0], sb)
			if err != nil {
				s.failed = err
				return s
			}
			// A client lists the tools once connected, which is when the
			// server gets ready.
			if _, err := srv.cs.ListTools(ctx, nil); err != nil {
				srv.close()
				s.failed = err
				return s
			}
			time.Sleep(firstPause)
			m := marker("first", r, i)
			d, err := srv.call(ctx, prompt(m), e2eModel, m, e2eCallTimeout)
			if err == nil {
				m = marker("firstnext", r, i)
				var d2 time.Duration
				if d2, err = srv.call(ctx, prompt(m), e2eModel, m, e2eCallTimeout); err == nil {
					v.first, v.next = append(v.first, d.Seconds()), append(v.next, d2.Seconds())
				}
			}
			if cerr := srv.close(); err == nil {
				err = cerr
			}
			if err != nil {
				s.failed = err
				return s
			}
		}
	}
	limit := vs[0].next.median()
	t := newTable("server", "first chat p50", "min – max", "next chat p50 (limit)", "first ÷ limit", "target")
	for _, v := range vs {
		fmt.Fprintf(b.log, "  first chat %s: p50 %s, next %s\n", v.name, fmtDur(v.first.median()), fmtDur(v.next.median()))
		t.add(v.name, fmtDur(v.first.median()), fmtRange(v.first, fmtDur), fmtDur(v.next.median()),
			fmt.Sprintf("%.1f×", v.first.median()/limit), "≤ 0.3 s")
	}
	s.table = t
	first := vs[0].first.median()
	b.rep.verdicts = append(b.rep.verdicts, verdict{
		goal: "first warm `chat`, " + firstPause.String() + " after the client connects, ≤ 0.3 s",
		measured: fmt.Sprintf("%s (min–max %s), %.1f× the limit; %s with `--warm-on-connect=false`",
			fmtDur(first), fmtRange(vs[0].first, fmtDur), first/limit, fmtDur(vs[1].first.median())),
		limit: "a warm chat in the same process: " + fmtDur(limit),
		met:   first <= 0.3, known: true,
	})
	return s
}

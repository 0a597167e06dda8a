package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// warmSeries runs long series of calls through our default (warm) server
// with the real CLI against the fake API: a new `chat` each time, back to
// back and with a pause between calls, and `chat-reply` on one session.
// They show a warm process's behaviour over its life (spare sessions,
// recycling by sessions held), which the one-call-per-round e2e section
// does not.
func (b *bench) warmSeries(ctx context.Context) *section {
	s := &section{
		title: "Warm series: many calls in a row with the real Gemini CLI against a local fake Gemini API",
		intro: fmt.Sprintf("Our server alone (default backend, any -server-flags), one process, the real CLI talking to internal/geminitest/fakeapi on 127.0.0.1 as in the end-to-end section. "+
			"*chat* rows: %d new chats (each a new session), one after the other with the given pause between the end of one and the start of the next; "+
			"*chat-reply*: %d replies on one session, back to back. One unmeasured chat first starts the warm process. "+
			"Percentiles are over all the calls of a row; every answer is checked to echo its prompt.", b.cfg.warmCalls, b.cfg.warmCalls),
	}
	if b.realCLI == "" {
		s.skipped = b.realWhy
		b.rep.verdicts = append(b.rep.verdicts, verdict{goal: fmt.Sprintf("warm `chat`, %d new chats back to back: median ≤ 40 ms", burstLen), measured: "skipped: " + b.realWhy})
		return s
	}
	api := fakeapi.New()
	defer api.Close()
	sb, err := newRealCLISandbox(b.tmp, "warm-series", b.realDir, api.URL())
	if err != nil {
		s.failed = err
		return s
	}
	// The replies all continue one session: room for all of them past the
	// default --max-turns.
	tg := b.targets("--max-turns", fmt.Sprint(b.cfg.warmCalls+10))[0]
	srv, _, err := startStdio(ctx, tg, sb)
	if err != nil {
		s.failed = err
		return s
	}
	defer srv.close()
	m := marker("warmseries", 0, 0)
	if _, err := srv.call(ctx, prompt(m), e2eModel, m, e2eCallTimeout); err != nil {
		s.failed = err
		return s
	}
	t := newTable("calls", "pause between calls", "p50", "p99", "min – max")
	b.warmBursts(ctx, s, srv, t)
	if s.failed != nil {
		return s
	}
	for _, pause := range []time.Duration{0, 300 * time.Millisecond} {
		var ser series
		for i := range b.cfg.warmCalls {
			if pause > 0 {
				time.Sleep(pause)
			}
			m := marker(fmt.Sprintf("warmchat%d", pause.Milliseconds()), 0, i)
			d, err := srv.call(ctx, prompt(m), e2eModel, m, e2eCallTimeout)
			if err != nil {
				s.failed = err
				return s
			}
			ser = append(ser, d.Seconds())
		}
		fmt.Fprintf(b.log, "  chat, pause %v: p50 %s p99 %s\n", pause, fmtDur(ser.median()), fmtDur(ser.percentile(99)))
		t.add(fmt.Sprintf("%d × `chat`", len(ser)), pause.String(), fmtDur(ser.median()), fmtDur(ser.percentile(99)), fmtRange(ser, fmtDur))
	}
	// Replies on one session.
	m = marker("warmreply", 0, 0)
	res, err := srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": prompt(m), "model": e2eModel}})
	if err != nil {
		s.failed = err
		return s
	}
	id, _ := res.Meta["sessionId"].(string)
	if id == "" {
		s.failed = errors.New("the chat's result names no sessionId")
		return s
	}
	var ser series
	for i := range b.cfg.warmCalls {
		m := marker("warmreply", 1, i)
		start := time.Now()
		res, err := srv.cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat-reply", Arguments: map[string]any{"prompt": prompt(m), "sessionId": id}})
		d := time.Since(start)
		if err != nil {
			s.failed = fmt.Errorf("chat-reply %d: %w", i, err)
			return s
		}
		if text := resultText(res); res.IsError || !strings.Contains(text, m) {
			s.failed = fmt.Errorf("chat-reply %d: error %v: %s", i, res.IsError, clip(text, 300))
			return s
		}
		ser = append(ser, d.Seconds())
	}
	t.add(fmt.Sprintf("%d × `chat-reply`", len(ser)), "0s", fmtDur(ser.median()), fmtDur(ser.percentile(99)), fmtRange(ser, fmtDur))
	s.table = t
	if cli, err := backendTimes(srv.stderr.Name(), id); err != nil || len(cli) != len(ser) {
		s.notes = append(s.notes, fmt.Sprintf("The replies' split between the CLI and our server is not shown: the server's log gave %d of %d times (%v).", len(cli), len(ser), err))
	} else {
		ours := ser.minus(cli)
		s.notes = append(s.notes, fmt.Sprintf("Where a `chat-reply` goes: the backend's part (the CLI's `set_model` and prompt over ACP, as the server logs it: `gemini call done … elapsed`) p50 %s, p99 %s, min %s; "+
			"the rest (MCP, the session's lease and record, the bench's client) p50 %s, p99 %s.",
			fmtDur(cli.median()), fmtDur(cli.percentile(99)), fmtDur(cli.min()), fmtDur(ours.median()), fmtDur(ours.percentile(99))))
	}
	return s
}

// backendTimes reads, from a server's log, the backend's time of each
// turn of session id, in order.
func backendTimes(logPath, id string) (series, error) {
	data, err := os.ReadFile(logPath)
	if err != nil {
		return nil, err
	}
	var out series
	for line := range strings.SplitSeq(string(data), "\n") {
		if !strings.Contains(line, `msg="gemini call done"`) || !strings.Contains(line, " resume="+id+" ") {
			continue
		}
		_, v, ok := strings.Cut(line, " elapsed=")
		if !ok {
			return out, fmt.Errorf("no elapsed in %q", clip(line, 200))
		}
		v, _, _ = strings.Cut(v, " ")
		d, err := time.ParseDuration(v)
		if err != nil {
			return out, err
		}
		out = append(out, d.Seconds())
	}
	return out, nil
}

// burstLen is how many new chats an agent sends in a row, the issue's
// "10 chats in a row".
const burstLen = 10

// burstPause is the pause of the paused row, and before each burst.
const burstPause = 300 * time.Millisecond

// warmBursts measures, -rounds times, burstLen new chats back to back
// (each burst after burstPause), interleaved with burstLen chats with
// burstPause between calls, the limit: a chat that finds the pool ready.
// The first burst is reported apart, as it also pays for a process the
// pool may start for it; the verdict takes the median of the bursts'
// medians after it.
func (b *bench) warmBursts(ctx context.Context, s *section, srv *server, t *table) {
	var first, burst, paused, burstMeds, pausedMeds series
	for round := range b.cfg.rounds {
		for _, pause := range []time.Duration{0, burstPause} {
			time.Sleep(burstPause)
			var ser series
			for i := range burstLen {
				if pause > 0 && i > 0 {
					time.Sleep(pause)
				}
				m := marker(fmt.Sprintf("warmburst%d", pause.Milliseconds()), round, i)
				d, err := srv.call(ctx, prompt(m), e2eModel, m, e2eCallTimeout)
				if err != nil {
					s.failed = err
					return
				}
				ser = append(ser, d.Seconds())
			}
			fmt.Fprintf(b.log, "  round %d, %d chats, pause %v: p50 %s max %s\n", round+1, burstLen, pause, fmtDur(ser.median()), fmtDur(ser.max()))
			switch {
			case pause > 0:
				paused = append(paused, ser...)
				pausedMeds = append(pausedMeds, ser.median())
			case round == 0 && b.cfg.rounds > 1:
				first = ser
			default:
				burst = append(burst, ser...)
				burstMeds = append(burstMeds, ser.median())
			}
		}
	}
	if len(first) > 0 {
		t.add(fmt.Sprintf("%d × `chat`, the first burst", len(first)), "0s", fmtDur(first.median()), fmtDur(first.percentile(99)), fmtRange(first, fmtDur))
	}
	t.add(fmt.Sprintf("%d × `chat` in bursts of %d", len(burst), burstLen), "0s", fmtDur(burst.median()), fmtDur(burst.percentile(99)), fmtRange(burst, fmtDur))
	t.add(fmt.Sprintf("%d × `chat` in series of %d", len(paused), burstLen), burstPause.String(), fmtDur(paused.median()), fmtDur(paused.percentile(99)), fmtRange(paused, fmtDur))
	s.notes = append(s.notes, fmt.Sprintf("Bursts: %d rounds, each %d new chats back to back then %d with %s between calls, each after a %s pause. "+
		"The first burst also pays for the start of the pool's second `gemini --acp` process, when new chats come faster than one process makes spare sessions; "+
		"the target takes the median of the later bursts' medians (%s), against the paused series' (%s).",
		b.cfg.rounds, burstLen, burstLen, burstPause, burstPause, fmtDur(burstMeds.median()), fmtDur(pausedMeds.median())))
	b.rep.verdicts = append(b.rep.verdicts, verdict{
		goal: fmt.Sprintf("warm `chat`, %d new chats back to back: median ≤ 40 ms", burstLen),
		measured: fmt.Sprintf("%s, %.1f× the paused chats' (min–max of the bursts' medians %s)",
			fmtDur(burstMeds.median()), burstMeds.median()/pausedMeds.median(), fmtRange(burstMeds, fmtDur)),
		limit: fmt.Sprintf("chats %s apart: %s", burstPause, fmtDur(pausedMeds.median())),
		met:   burstMeds.median() <= 0.040,
		known: true,
	})
}

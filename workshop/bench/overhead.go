package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

const fakeCallTimeout = 60 * time.Second

// marker is the unique start of a prompt; the fake CLI echoes a prompt's
// first 60 runes and the fake API its first 40, so it comes back in every
// genuine answer.
func marker(sec string, round, i int) string { return fmt.Sprintf("bench-%s-r%d-c%d", sec, round, i) }

func prompt(mark string) string { return mark + " what is the capital of France?" }

// overhead measures sequential chat calls with an instant fake CLI through
// each server, against exec'ing the fake directly with exactly the
// arguments our server gave it.
func (b *bench) overhead(ctx context.Context) *section {
	s := &section{
		title: "Server overhead per call (instant fake CLI)",
		intro: fmt.Sprintf("Sequential `tools/call`s over stdio, each answered by the fake CLI at once. In each round every target makes %d calls, "+
			"interleaved call by call (bare, ours, peers, bare, ours, …); the round's value is the median of a target's calls. *Bare exec* runs the fake from the bench itself (Go os/exec, stdin /dev/null) with the very argv our one-shot backend used, "+
			"so for that backend *over bare exec* (paired per round) is what the server adds to a call: MCP decoding, validation, session bookkeeping, process setup, parsing, the answer's way back "+
			"(the warm backend starts no process per call, so its difference is negative). "+
			"*`ping` round trip* is an MCP `ping` made right after each call: the stdio transport's share of that overhead. "+
			"*CPU per call* is user+system time from /proc/<pid>/stat over the measured calls (pings included): the server process's own, and that of the CLI runs it reaped "+
			"(for choplin that includes a `which` per call). CPU time barely depends on other load on the machine.", b.cfg.batch),
	}
	targets := b.stdioTargets()
	var fl fleet
	defer closeFleet(&fl, s, b.log)
	servers := make([]*server, len(targets))
	calls := make([]int, len(targets))
	for i, t := range targets {
		sb, err := b.newSandbox("overhead-"+t.Name, b.fakeDir)
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
	}
	// Warm up every server (first calls fill caches, JIT, page in code).
	for i, srv := range servers {
		for w := range 3 {
			m := marker("warm", 0, w)
			if _, err := srv.call(ctx, prompt(m), "", m, fakeCallTimeout); err != nil {
				s.failed = err
				return s
			}
			calls[i]++
		}
	}
	// The bare exec repeats what our one-shot backend ran; the warm
	// backend runs no CLI per call, so there is nothing to repeat.
	oi := slices.IndexFunc(targets, (*target).oneshot)
	if oi < 0 {
		s.failed = errors.New("no target runs our server one-shot, so there is no argv for the bare exec")
		return s
	}
	tmpl, err := captureArgv(servers[oi].sb.fakeLog)
	if err != nil {
		s.failed = err
		return s
	}
	bareSB, err := b.newSandbox("overhead-bare", b.fakeDir)
	if err != nil {
		s.failed = err
		return s
	}
	for w := range 3 {
		m := marker("warm", 0, w)
		if _, err := bareExec(ctx, b.fake, tmpl.argv(), prompt(m), bareSB, m); err != nil {
			s.failed = err
			return s
		}
	}

	// Interleave call by call (bare, ours, peer, peer, …, bare, ours, …),
	// not batch by batch: a burst of load from elsewhere on the machine
	// then lands on every target alike instead of on one batch.
	bare := series{}
	perTarget := make([]series, len(targets))
	pingRT := make([]series, len(targets))
	cpu0, err := cpuOf(servers)
	if err != nil {
		s.failed = err
		return s
	}
	_, bench0, err := ownCPU(os.Getpid())
	if err != nil {
		s.failed = err
		return s
	}
	for r := range b.cfg.rounds {
		fmt.Fprintf(b.log, "  round %d/%d\n", r+1, b.cfg.rounds)
		if err := bareSB.resetFake(); err != nil {
			s.failed = err
			return s
		}
		for _, srv := range servers {
			if err := srv.sb.resetFake(); err != nil {
				s.failed = err
				return s
			}
		}
		bareLat := make([]time.Duration, 0, b.cfg.batch)
		lat := make([][]time.Duration, len(servers))
		pings := make([][]time.Duration, len(servers))
		for i := range b.cfg.batch {
			m := marker("ovh", r, i)
			d, err := bareExec(ctx, b.fake, tmpl.argv(), prompt(m), bareSB, m)
			if err != nil {
				s.failed = err
				return s
			}
			bareLat = append(bareLat, d)
			for ti, srv := range servers {
				d, err := srv.call(ctx, prompt(m), "", m, fakeCallTimeout)
				if err != nil {
					s.failed = err
					return s
				}
				calls[ti]++
				lat[ti] = append(lat[ti], d)
				// An MCP ping measures the protocol's round trip alone (no
				// CLI), to split the overhead into transport and work.
				start := time.Now()
				if err := srv.cs.Ping(ctx, nil); err != nil {
					s.failed = fmt.Errorf("%s: ping: %w", srv.t.Name, err)
					return s
				}
				pings[ti] = append(pings[ti], time.Since(start))
			}
		}
		bare = append(bare, durations(bareLat).median())
		for ti := range servers {
			perTarget[ti] = append(perTarget[ti], durations(lat[ti]).median())
			pingRT[ti] = append(pingRT[ti], durations(pings[ti]).median())
		}
	}

	cpu1, err := cpuOf(servers)
	if err != nil {
		s.failed = err
		return s
	}
	_, bench1, err := ownCPU(os.Getpid())
	if err != nil {
		s.failed = err
		return s
	}
	measured := float64(b.cfg.rounds * b.cfg.batch)
	t := newTable("target", "per call (median)", "min – max", "× ours", "over bare exec (median)", "min – max", "`ping` round trip", "server CPU per call", "CLI CPU per call")
	oursMed := perTarget[0].median()
	t.add("bare exec of the fake (one-shot backend's argv)", fmtDur(bare.median()), fmtRange(bare, fmtDur), fmtRatio(bare.median(), oursMed), "–", "–", "–", "–",
		fmtDur((bench1-bench0)/measured))
	for i, tg := range targets {
		d := perTarget[i].minus(bare)
		used := cpu1[i].minus(cpu0[i])
		t.add(tg.Name, fmtDur(perTarget[i].median()), fmtRange(perTarget[i], fmtDur), fmtRatio(perTarget[i].median(), oursMed),
			fmtSignedDur(d.median()), fmtRange(d, fmtSignedDur), fmtDur(pingRT[i].median()), fmtDur(used.self/measured), fmtDur(used.children/measured))
	}
	s.table = t
	over := perTarget[oi].minus(bare)
	osName := targets[oi].Name
	s.notes = append(s.notes, fmt.Sprintf("%s vs bare exec: ×%.2f, %s per call (median of paired rounds). "+
		"The one-shot backend does what the bare exec does plus the server's work, so this is the overhead the target is about.",
		osName, perTarget[oi].median()/bare.median(), fmtSignedDur(over.median())))
	b.rep.verdicts = append(b.rep.verdicts, verdict{
		goal:     "overhead ≤ 1 ms per call above bare exec (one-shot backend, which execs the CLI per call as the bare exec does)",
		measured: fmt.Sprintf("%s (min–max %s; ×%.2f of bare exec)", fmtSignedDur(over.median()), fmtRange(over, fmtSignedDur), perTarget[oi].median()/bare.median()),
		met:      over.median() <= 0.001, known: true,
	})
	if !targets[0].oneshot() {
		d := perTarget[0].minus(bare)
		b.rep.verdicts = append(b.rep.verdicts, verdict{
			goal: fmt.Sprintf("the same, default backend (%s): no CLI start per call", targets[0].Backend),
			measured: fmt.Sprintf("%s per call = %s vs bare exec (×%.2f)", fmtDur(perTarget[0].median()), fmtSignedDur(d.median()),
				perTarget[0].median()/bare.median()),
			met: d.median() <= 0.001, known: true,
		})
	}
	b.rep.argv = invocationTable(targets, servers, calls)
	for _, t := range targets {
		b.rep.notes = append(b.rep.notes, fmt.Sprintf("**%s**: %s.", t.Name, t.Notes))
	}
	return s
}

// cpuOf reads the CPU times of every server.
func cpuOf(servers []*server) ([]cpuTimes, error) {
	out := make([]cpuTimes, len(servers))
	for i, srv := range servers {
		c, err := readCPU(srv.pid())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", srv.t.Name, err)
		}
		out[i] = c
	}
	return out, nil
}

// argvTemplate is the argument list our server gave the fake, with the
// session id to be replaced on each bare exec. The prompt goes on the
// fake's stdin, as our server gives it (never in argv, where every local
// user could read it in /proc/PID/cmdline).
type argvTemplate struct {
	args      []string
	sessionAt int // index of the --session-id value, or -1
}

func captureArgv(logPath string) (*argvTemplate, error) {
	inv, err := geminitest.ReadLog(logPath)
	if err != nil {
		return nil, err
	}
	if len(inv) == 0 {
		return nil, fmt.Errorf("our server's calls left no line in the fake's log %s", logPath)
	}
	last := inv[len(inv)-1]
	t := &argvTemplate{args: last.Argv, sessionAt: -1}
	for i, a := range t.args {
		if a == "--session-id" && i+1 < len(t.args) {
			t.sessionAt = i + 1
		}
		if last.Prompt != "" && strings.Contains(a, last.Prompt) {
			return nil, fmt.Errorf("our server's argv %q holds the prompt; the bare exec gives it on stdin: update captureArgv", t.args)
		}
	}
	if last.StdinKind != geminitest.StdinPipe && last.StdinKind != geminitest.StdinFile {
		return nil, fmt.Errorf("our server gave the fake no prompt on stdin (stdin %s); update captureArgv", last.StdinKind)
	}
	return t, nil
}

// argv is the template with a fresh session id, as our server would pick.
func (t *argvTemplate) argv() []string {
	a := append([]string{}, t.args...)
	if t.sessionAt >= 0 {
		a[t.sessionAt] = session.NewUUID()
	}
	return a
}

// bareExec runs the fake once with prompt on its stdin, as a minimal Go
// wrapper would, and checks its answer. The time covers start to exit,
// output read.
func bareExec(ctx context.Context, fake string, args []string, prompt string, sb *sandbox, expect string) (time.Duration, error) {
	cctx, cancel := context.WithTimeout(ctx, fakeCallTimeout)
	defer cancel()
	cmd := exec.CommandContext(cctx, fake, args...)
	cmd.Dir = sb.work
	cmd.Env = sb.env(nil)
	cmd.Stdin = strings.NewReader(prompt)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return d, fmt.Errorf("bare exec of the fake: %w: %s", err, clip(stderr.String(), 600))
	}
	if !strings.Contains(stdout.String(), expect) {
		return d, fmt.Errorf("bare exec of the fake: output lacks %q: %s", expect, clip(stdout.String(), 600))
	}
	return d, nil
}

// invocationTable shows how each server ran the CLI, from the fake's log.
func invocationTable(targets []*target, servers []*server, calls []int) *table {
	t := newTable("server", "argv (after `gemini`)", "stdin", "CLI runs per call").alignLeft(1, 2)
	for i, srv := range servers {
		inv, err := geminitest.ReadLog(srv.sb.fakeLog)
		if err != nil || len(inv) == 0 {
			t.add(targets[i].Name, fmt.Sprintf("(no log: %v)", err), "", "")
			continue
		}
		last := inv[len(inv)-1]
		var args []string
		for _, a := range last.Argv {
			switch {
			case a == last.Prompt:
				a = "PROMPT"
			case strings.HasPrefix(a, "--prompt=") && strings.TrimPrefix(a, "--prompt=") == last.Prompt:
				a = "--prompt=PROMPT"
			case session.IsUUID(a):
				a = "UUID"
			}
			args = append(args, shellQuote(a))
		}
		t.add(targets[i].Name, "`"+strings.Join(args, " ")+"`", stdinKinds[last.StdinKind], fmt.Sprintf("%.2f", float64(len(inv))/float64(calls[i])))
	}
	return t
}

// stdinKinds words the fake's StdinKind for the report. Node gives a
// child's stdio "pipe" as a socket, which the fake reports as "other".
var stdinKinds = map[string]string{
	geminitest.StdinDevNull: "/dev/null",
	geminitest.StdinPipe:    "pipe",
	geminitest.StdinFile:    "file",
	geminitest.StdinOther:   "socket (Node's stdio pipe)",
}

// closeFleet closes a section's servers; a server that does not exit
// cleanly is noted in the section, not fatal.
func closeFleet(fl *fleet, s *section, log io.Writer) {
	if err := fl.closeAll(); err != nil {
		fmt.Fprintf(log, "  closing servers: %v\n", err)
		s.notes = append(s.notes, "Note: a server did not exit cleanly when its stdin closed: "+oneLine(err.Error()))
	}
}

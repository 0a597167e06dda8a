package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// memoryChunks is how many interleaved slices the memory run's calls are
// made in: each target makes calls/memoryChunks calls in turn.
const memoryChunks = 10

// memoryQuiet is how long the memory run waits after its calls before the
// last reading: our server gives memory back after 30–60 s without calls.
const memoryQuiet = 65 * time.Second

// The memory targets: our server's RSS right after the calls, and its
// private part against the no-op go-sdk server's in the same run.
const (
	memoryRSSLimit  = 16e6
	memoryAnonLimit = 2.0
)

// memory reads each server's resident set (VmRSS in /proc/<pid>/status;
// for the Node peers that is the node process) when idle, after the
// calls, made in interleaved chunks, and idle again after them.
func (b *bench) memory(ctx context.Context) *section {
	n := b.cfg.calls
	chunk := n / memoryChunks
	n = chunk * memoryChunks
	s := &section{
		title: fmt.Sprintf("Memory: resident set idle, after %d calls, and idle again", n),
		intro: fmt.Sprintf("VmRSS of the server process (the node process for the peers). *Idle*: 1 s after the handshake and one `tools/list`, before any call. "+
			"Then %d sequential calls with the instant fake, made in %d interleaved chunks of %d per target; RSS is read after the first chunk, after the last, and %v after the last (idle again). "+
			"*Peak* is VmHWM. *Children's RSS* sums the server's live descendants when idle and at the end: the warm backend's long-lived `gemini --acp` processes "+
			"(here the fake's; the real CLI's are about 220 MB each), nothing for the others. One process per target, so this table has no rounds. "+
			"The no-op go-sdk server (bench/noopserver, a chat tool that echoes its prompt) is a target of the same run: what the Go runtime and the SDK alone hold. "+
			"*Private* and *file-backed* split the RSS after the calls into RssAnon (heap, stacks: what the process allocated) and RssFile "+
			"(pages of the binary and of shared libraries it touched, which the kernel can drop and read again; "+
			"how many depends also on how the file sits in the page cache, since the kernel maps a cached piece of the file whole on a fault).", n, memoryChunks, chunk, memoryQuiet),
	}
	targets := append(b.stdioTargets(), noopTarget(b.noopServer))
	noop := len(targets) - 1
	var fl fleet
	defer closeFleet(&fl, s, b.log)
	servers := make([]*server, len(targets))
	for i, t := range targets {
		sb, err := b.newSandbox("memory-"+t.Name, b.fakeDir)
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
		if _, err := srv.cs.ListTools(ctx, nil); err != nil {
			s.failed = fmt.Errorf("%s: tools/list: %w", t.Name, err)
			return s
		}
	}
	time.Sleep(time.Second)
	read := func() ([]memInfo, error) {
		out := make([]memInfo, len(servers))
		for i, srv := range servers {
			m, err := readMem(srv.pid())
			if err != nil {
				return nil, fmt.Errorf("%s: %w", srv.t.Name, err)
			}
			out[i] = m
		}
		return out, nil
	}
	idle, err := read()
	if err != nil {
		s.failed = err
		return s
	}
	childIdle := make([]float64, len(servers))
	for i, srv := range servers {
		childIdle[i] = descendantsRSS(srv.pid())
	}
	var first []memInfo
	for c := range memoryChunks {
		fmt.Fprintf(b.log, "  chunk %d/%d\n", c+1, memoryChunks)
		for _, srv := range servers {
			if err := srv.sb.resetFake(); err != nil {
				s.failed = err
				return s
			}
			for i := range chunk {
				m := marker("mem", c, i)
				if _, err := srv.call(ctx, prompt(m), "", m, fakeCallTimeout); err != nil {
					s.failed = err
					return s
				}
			}
		}
		if c == 0 {
			if first, err = read(); err != nil {
				s.failed = err
				return s
			}
		}
	}
	last, err := read()
	if err != nil {
		s.failed = err
		return s
	}
	childRSS := make([]float64, len(servers))
	for i, srv := range servers {
		childRSS[i] = descendantsRSS(srv.pid())
	}
	// Our server gives memory back after 30–60 s without calls; wait for
	// it once for all targets.
	fmt.Fprintf(b.log, "  idle for %v after the calls\n", memoryQuiet)
	time.Sleep(memoryQuiet)
	quiet, err := read()
	if err != nil {
		s.failed = err
		return s
	}
	t := newTable("target", "idle", fmt.Sprintf("after %d calls", chunk), fmt.Sprintf("after %d calls", n),
		fmt.Sprintf("growth %d → %d", chunk, n), "peak (VmHWM)", fmt.Sprintf("private / file-backed after %d", n),
		"idle × ours", fmt.Sprintf("after %d × ours", n), "children's RSS idle / end",
		fmt.Sprintf("idle %v after the calls", memoryQuiet), fmt.Sprintf("private / file-backed %v after", memoryQuiet))
	for i, tg := range targets {
		t.add(tg.Name, fmtMB(idle[i].rss), fmtMB(first[i].rss), fmtMB(last[i].rss), fmtSignedMB(last[i].rss-first[i].rss),
			fmtMB(last[i].hwm), fmtMB(last[i].anon)+" / "+fmtMB(last[i].file),
			fmtRatio(idle[i].rss, idle[0].rss), fmtRatio(last[i].rss, last[0].rss), fmtMB(childIdle[i])+" / "+fmtMB(childRSS[i]),
			fmtMB(quiet[i].rss), fmtMB(quiet[i].anon)+" / "+fmtMB(quiet[i].file))
	}
	s.table = t
	growth := last[0].rss - first[0].rss
	// Flat: within 1 MB or 10 % of the level after the first chunk,
	// whichever is larger, so that allocator noise is not called a leak.
	flatLimit := math.Max(1e6, 0.10*first[0].rss)
	s.notes = append(s.notes, fmt.Sprintf("\"Flat\" is judged as growth from the first chunk to the end within max(1 MB, 10 %%) = %s.", fmtMB(flatLimit)))
	// The floor of this binary: the peak RSS of --version, which exits
	// after the runtime's start and every package's initialisation.
	var initPeak series
	for range 3 {
		_, peak, err := execPeak(ctx, []string{b.serverBin, "--version"}, servers[0].sb)
		if err != nil {
			s.failed = err
			return s
		}
		initPeak = append(initPeak, peak)
	}
	s.notes = append(s.notes, fmt.Sprintf("`gemini-mcp-server --version`, which exits after the Go runtime's start and every package's initialisation, peaks at %s (VmHWM, median of 3): "+
		"what this binary holds before it serves anything, mostly pages of the binary that initialisation touched.", fmtMB(initPeak.median())))
	o, z := last[0], last[noop]
	b.rep.verdicts = append(b.rep.verdicts,
		verdict{goal: fmt.Sprintf("resident memory ≤ %.0f MB after %d calls", memoryRSSLimit/1e6, n),
			measured: fmt.Sprintf("%s (%s private, %s file-backed; %s idle before the calls, %s %v after them); %.2f× the no-op's; `--version` alone peaks at %s",
				fmtMB(o.rss), fmtMB(o.anon), fmtMB(o.file), fmtMB(idle[0].rss), fmtMB(quiet[0].rss), memoryQuiet, o.rss/z.rss, fmtMB(initPeak.median())),
			limit: fmt.Sprintf("fixed; %s: %s", noopName, fmtMB(z.rss)),
			met:   o.rss <= memoryRSSLimit, known: true},
		verdict{goal: fmt.Sprintf("private (anonymous) memory after %d calls ≤ %.0f× the no-op go-sdk server's", n, memoryAnonLimit),
			measured: fmt.Sprintf("%.2f× (%s vs %s RssAnon)", o.anon/z.anon, fmtMB(o.anon), fmtMB(z.anon)),
			limit:    fmt.Sprintf("%s: %s private, %s in all", noopName, fmtMB(z.anon), fmtMB(z.rss)),
			met:      o.anon <= memoryAnonLimit*z.anon, known: true},
		verdict{goal: fmt.Sprintf("RSS flat after %d calls", n),
			measured: fmt.Sprintf("%s idle, %s after %d, %s after %d (%s)", fmtMB(idle[0].rss), fmtMB(first[0].rss), chunk, fmtMB(last[0].rss), n, fmtSignedMB(growth)),
			met:      growth <= flatLimit, known: true},
	)
	return s
}

// parseMem reads the memInfo fields from a /proc/<pid>/status text; name
// is for errors.
func parseMem(r io.Reader, name string) (memInfo, error) {
	var m memInfo
	fields := map[string]*float64{"VmRSS": &m.rss, "VmHWM": &m.hwm, "RssAnon": &m.anon, "RssFile": &m.file}
	found := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		key, val, ok := strings.Cut(sc.Text(), ":")
		dst := fields[key]
		if !ok || dst == nil {
			continue
		}
		f := strings.Fields(val) // "12345 kB"
		if len(f) != 2 || f[1] != "kB" {
			return memInfo{}, fmt.Errorf("%s: odd %s line %q", name, key, val)
		}
		kb, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return memInfo{}, fmt.Errorf("%s: %s: %w", name, key, err)
		}
		*dst = kb * 1024
		found++
	}
	if err := sc.Err(); err != nil {
		return memInfo{}, err
	}
	if found != len(fields) {
		return memInfo{}, fmt.Errorf("%s: want VmRSS, VmHWM, RssAnon and RssFile, found %d of them", name, found)
	}
	return m, nil
}

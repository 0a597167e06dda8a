package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// apiModel is the model both sides of the API comparison ask for: the API
// backend's default, which the bare client must name itself.
const apiModel = "gemini-2.5-flash"

// apiKey is the key both sides send to the fake API, which accepts any.
const apiKey = "bench-key"

// apiBackend measures the API backend: its overhead per call over a bare
// genai client call to the same fake Gemini API, and what linking the SDK
// costs every server at start (cold start, idle RSS and package
// initialisation of the default build against a -tags noapi build).
func (b *bench) apiBackend(ctx context.Context) *section {
	s := &section{
		title: "API backend: overhead per call over a bare `genai` call, and what the SDK costs at start",
		intro: fmt.Sprintf("Sequential `tools/call`s over stdio to our server with `--backend api` (key auth, `GOOGLE_GEMINI_BASE_URL` pointing at "+
			"internal/geminitest/fakeapi on 127.0.0.1, which streams its answer at once), against the same request made by a bare "+
			"google.golang.org/genai client in the bench process: `Models.GenerateContentStream` with model %s and the same configuration, its stream read "+
			"to the end, over a connection it keeps alive as the server does. In each round each side makes %d calls, interleaved call by call "+
			"(bare, ours, bare, …); the round's value is the median of its calls, and *over bare genai* pairs the rounds. Both sides talk to one fake, "+
			"so it answers each alike. What the server adds is the MCP round trip over stdio (the *`ping`* column), decoding and validation, "+
			"the session id, the model check (against the list fetched on the first call), reading and writing the session's turns, and the answer's way back.",
			apiModel, b.cfg.batch),
	}
	api := fakeapi.New()
	defer api.Close()
	sb, err := b.newSandbox("api-ours", b.fakeDir)
	if err != nil {
		s.failed = err
		return s
	}
	t := ours(b.serverBin, b.serverVersion, "gemini-mcp-server --backend api", backendAPI,
		append(append([]string{}, b.cfg.serverFlags...), "--backend", "api")...)
	t.Env = []string{"GEMINI_API_KEY=" + apiKey, "GOOGLE_GEMINI_BASE_URL=" + api.URL()}
	var fl fleet
	defer closeFleet(&fl, s, b.log)
	srv, _, err := startStdio(ctx, t, sb)
	if err != nil {
		s.failed = err
		return s
	}
	fl.add(srv)

	transport := http.DefaultTransport.(*http.Transport).Clone()
	defer transport.CloseIdleConnections()
	client, err := genai.NewClient(ctx, &genai.ClientConfig{
		APIKey:      apiKey,
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  &http.Client{Transport: transport},
		HTTPOptions: genai.HTTPOptions{BaseURL: api.URL()},
	})
	if err != nil {
		s.failed = fmt.Errorf("bare genai client: %w", err)
		return s
	}
	bare := func(m string) (time.Duration, error) { return bareGenai(ctx, client, prompt(m), m) }

	// Warm up both sides: our server fetches the model list on its first
	// call, and both open their connection to the fake.
	for w := range 3 {
		m := marker("apiwarm", 0, w)
		if _, err := bare(m); err != nil {
			s.failed = err
			return s
		}
		if _, err := srv.call(ctx, prompt(m), "", m, fakeCallTimeout); err != nil {
			s.failed = err
			return s
		}
	}
	cpu0, err := readCPU(srv.pid())
	if err != nil {
		s.failed = err
		return s
	}
	var bareS, oursS, pingS series
	for r := range b.cfg.rounds {
		fmt.Fprintf(b.log, "  calls, round %d/%d\n", r+1, b.cfg.rounds)
		var bl, ol, pl []time.Duration
		for i := range b.cfg.batch {
			m := marker("api", r, i)
			d, err := bare(m)
			if err != nil {
				s.failed = err
				return s
			}
			bl = append(bl, d)
			if d, err = srv.call(ctx, prompt(m), "", m, fakeCallTimeout); err != nil {
				s.failed = err
				return s
			}
			ol = append(ol, d)
			start := time.Now()
			if err := srv.cs.Ping(ctx, nil); err != nil {
				s.failed = fmt.Errorf("%s: ping: %w", t.Name, err)
				return s
			}
			pl = append(pl, time.Since(start))
		}
		bareS = append(bareS, durations(bl).median())
		oursS = append(oursS, durations(ol).median())
		pingS = append(pingS, durations(pl).median())
	}
	cpu1, err := readCPU(srv.pid())
	if err != nil {
		s.failed = err
		return s
	}
	measured := float64(b.cfg.rounds * b.cfg.batch)
	over := oursS.minus(bareS)
	tab := newTable("target", "per call (median)", "min – max", "× bare", "over bare genai (median)", "min – max", "`ping` round trip", "server CPU per call")
	tab.add("bare genai client (in the bench process)", fmtDur(bareS.median()), fmtRange(bareS, fmtDur), "×1.00", "–", "–", "–", "–")
	tab.add(t.Name, fmtDur(oursS.median()), fmtRange(oursS, fmtDur), fmtRatio(oursS.median(), bareS.median()),
		fmtSignedDur(over.median()), fmtRange(over, fmtSignedDur), fmtDur(pingS.median()), fmtDur(cpu1.minus(cpu0).self/measured))
	s.table = tab
	b.rep.verdicts = append(b.rep.verdicts, verdict{
		goal:     "API backend: overhead ≤ 1 ms per call above a bare genai call to the same fake API",
		measured: fmt.Sprintf("%s (min–max %s; %s against %s, ×%.2f)", fmtSignedDur(over.median()), fmtRange(over, fmtSignedDur), fmtDur(oursS.median()), fmtDur(bareS.median()), oursS.median()/bareS.median()),
		met:      over.median() <= 0.001, known: true,
	})
	closeFleet(&fl, s, b.log)

	if err := b.sdkStartCost(ctx, s, api.URL()); err != nil {
		s.failed = err
	}
	return s
}

// bareGenai makes the request the API backend makes for a new
// conversation, with the SDK alone, and checks that the answer echoes
// expect.
func bareGenai(ctx context.Context, client *genai.Client, prompt, expect string) (time.Duration, error) {
	cctx, cancel := context.WithTimeout(ctx, fakeCallTimeout)
	defer cancel()
	cfg := &genai.GenerateContentConfig{AutomaticContinuation: genai.Ptr(false)}
	contents := []*genai.Content{genai.NewContentFromText(prompt, genai.RoleUser)}
	var text strings.Builder
	start := time.Now()
	for chunk, err := range client.Models.GenerateContentStream(cctx, apiModel, contents, cfg) {
		if err != nil {
			return 0, fmt.Errorf("bare genai call: %w", err)
		}
		text.WriteString(chunk.Text())
	}
	d := time.Since(start)
	if !strings.Contains(text.String(), expect) {
		return d, fmt.Errorf("bare genai call: the answer does not echo %q: %s", expect, clip(text.String(), 600))
	}
	return d, nil
}

// startRow is one way of starting our server in the start-cost table.
type startRow struct {
	name string
	t    *target
	cold series // start → tools/list, seconds
	rss  series // VmRSS 1 s after tools/list, bytes
}

// sdkStartCost measures, interleaved round by round, cold start to
// tools/list and idle RSS of the default build (which links the genai SDK)
// and of the -tags noapi build, both choosing the warm CLI backend as a
// server with a gemini executable does, plus the default build serving
// the API; then the package initialisation of both builds with
// GODEBUG=inittrace=1. Its tables go into s's notes.
func (b *bench) sdkStartCost(ctx context.Context, s *section, apiURL string) error {
	flags := b.cfg.serverFlags
	rows := []*startRow{
		{name: "default build (links the genai SDK), backend " + b.backend(), t: ours(b.serverBin, b.serverVersion, "default build", b.backend(), flags...)},
		{name: "`-tags noapi` build, backend " + b.backend(), t: ours(b.serverNoAPI, b.serverVersion, "noapi build", b.backend(), flags...)},
		{name: "default build, `--backend api`", t: ours(b.serverBin, b.serverVersion, "default build --backend api", backendAPI, append(append([]string{}, flags...), "--backend", "api")...)},
	}
	rows[2].t.Env = []string{"GEMINI_API_KEY=" + apiKey, "GOOGLE_GEMINI_BASE_URL=" + apiURL}
	sbs := make([]*sandbox, len(rows))
	for i, r := range rows {
		sb, err := b.newSandbox("sdk-"+r.t.Name, b.fakeDir)
		if err != nil {
			return err
		}
		sbs[i] = sb
	}
	var floor series
	// One unmeasured round puts every binary in the page cache.
	for r := -1; r < b.cfg.rounds; r++ {
		if r >= 0 {
			fmt.Fprintf(b.log, "  start, round %d/%d\n", r+1, b.cfg.rounds)
			d, err := execToExit(ctx, []string{b.noop}, sbs[0])
			if err != nil {
				return err
			}
			floor = append(floor, d.Seconds())
		}
		var fl fleet
		err := func() error {
			defer closeFleet(&fl, s, b.log)
			colds := make([]float64, len(rows))
			for i, row := range rows {
				start := time.Now()
				srv, _, err := startStdio(ctx, row.t, sbs[i])
				if err != nil {
					return err
				}
				fl.add(srv)
				cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				res, err := srv.cs.ListTools(cctx, nil)
				colds[i] = time.Since(start).Seconds()
				cancel()
				if err != nil {
					return fmt.Errorf("%s: tools/list: %w", row.name, err)
				}
				if len(res.Tools) == 0 {
					return fmt.Errorf("%s: tools/list is empty", row.name)
				}
			}
			// Idle as in the memory section: 1 s after the first
			// tools/list (all servers of the round wait it out together).
			time.Sleep(time.Second)
			if r < 0 {
				return nil
			}
			for i, row := range rows {
				m, err := readMem(fl.servers[i].pid())
				if err != nil {
					return fmt.Errorf("%s: %w", row.name, err)
				}
				row.cold = append(row.cold, colds[i])
				row.rss = append(row.rss, m.rss)
			}
			return nil
		}()
		if err != nil {
			return err
		}
	}
	tab := newTable("server", "start → tools/list (median)", "min – max", "× noapi", "idle RSS (median)", "min – max", "× noapi")
	base := rows[1]
	for _, row := range rows {
		tab.add(row.name, fmtDur(row.cold.median()), fmtRange(row.cold, fmtDur), fmtRatio(row.cold.median(), base.cold.median()),
			fmtMB(row.rss.median()), fmtRange(row.rss, fmtMB), fmtRatio(row.rss.median(), base.rss.median()))
	}
	tab.add("floor: empty Go program (exec to exit)", fmtDur(floor.median()), fmtRange(floor, fmtDur), fmtRatio(floor.median(), base.cold.median()), "–", "–", "–")
	s.notes = append(s.notes, fmt.Sprintf("**What the SDK costs at start.** A new process per round and server, as in the cold-start section "+
		"(exec, `initialize`, `tools/list`), then 1 s idle and VmRSS, as in the memory section; %d rounds, the servers interleaved within each. "+
		"The first two rows differ only in `-tags noapi`, which leaves internal/backend/api and the SDK out of the binary.\n\n%s",
		b.cfg.rounds, tab.markdown()))
	for _, row := range rows[:2] {
		b.rep.verdicts = append(b.rep.verdicts,
			verdict{goal: "cold start to tools/list ≤ 10 ms, " + row.name, measured: fmtDur(row.cold.median()) + " (min–max " + fmtRange(row.cold, fmtDur) + ")", met: row.cold.median() <= 0.010, known: true},
			verdict{goal: "idle RSS ≤ 12 MB, " + row.name, measured: fmtMB(row.rss.median()) + " (min–max " + fmtRange(row.rss, fmtMB) + ")", met: row.rss.median() <= 12e6, known: true},
		)
	}
	d := rows[0].rss.median() - base.rss.median()
	s.notes = append(s.notes, fmt.Sprintf("The genai SDK adds %s to the cold start and %s to the idle RSS of a server that does not use it (medians, default build minus noapi build).",
		fmtSignedDur(rows[0].cold.median()-base.cold.median()), fmtSignedMB(d)))

	note, err := b.initCost(ctx, sbs[0])
	if err != nil {
		return err
	}
	s.notes = append(s.notes, note)
	return nil
}

// initLine is one line of GODEBUG=inittrace=1: init PKG @T ms, C ms clock, B bytes, A allocs.
var initLine = regexp.MustCompile(`^init (\S+) @[0-9.]+ ms, ([0-9.]+) ms clock, ([0-9]+) bytes, ([0-9]+) allocs`)

// initTrace runs bin --version with GODEBUG=inittrace=1 and returns each
// package's initialisation time (seconds) and heap bytes.
func initTrace(ctx context.Context, bin string, sb *sandbox) (clock, heap map[string]float64, err error) {
	cmd := exec.CommandContext(ctx, bin, "--version")
	cmd.Dir = sb.work
	cmd.Env = sb.env([]string{"GODEBUG=inittrace=1"})
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Errorf("%s --version: %w: %s", bin, err, clip(stderr.String(), 600))
	}
	clock, heap = map[string]float64{}, map[string]float64{}
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		m := initLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		c, _ := strconv.ParseFloat(m[2], 64)
		h, _ := strconv.ParseFloat(m[3], 64)
		clock[m[1]] += c / 1e3
		heap[m[1]] += h
	}
	if len(clock) == 0 {
		return nil, nil, fmt.Errorf("%s: GODEBUG=inittrace=1 printed no init lines", bin)
	}
	return clock, heap, nil
}

func sum(m map[string]float64) float64 {
	t := 0.0
	for _, v := range m {
		t += v
	}
	return t
}

// initCost compares the package initialisation of the two builds, round
// by round, and names the packages of the default build that cost most.
func (b *bench) initCost(ctx context.Context, sb *sandbox) (string, error) {
	var totalDef, totalNo, sdk series
	perPkg := map[string]series{}
	var noPkgs map[string]float64
	for range b.cfg.rounds {
		cd, _, err := initTrace(ctx, b.serverBin, sb)
		if err != nil {
			return "", err
		}
		cn, _, err := initTrace(ctx, b.serverNoAPI, sb)
		if err != nil {
			return "", err
		}
		noPkgs = cn
		totalDef = append(totalDef, sum(cd))
		totalNo = append(totalNo, sum(cn))
		only := 0.0
		for p, v := range cd {
			if _, ok := cn[p]; !ok {
				only += v
				perPkg[p] = append(perPkg[p], v)
			}
		}
		sdk = append(sdk, only)
	}
	type pkg struct {
		name string
		med  float64
	}
	var pkgs []pkg
	for p, s := range perPkg {
		pkgs = append(pkgs, pkg{p, s.median()})
	}
	sort.Slice(pkgs, func(i, j int) bool { return pkgs[i].med > pkgs[j].med })
	var top []string
	for _, p := range pkgs[:min(6, len(pkgs))] {
		top = append(top, fmt.Sprintf("`%s` %s", p.name, fmtDur(p.med)))
	}
	return fmt.Sprintf("**Package initialisation** (`GODEBUG=inittrace=1`, `--version`, %d rounds, medians): %s in the default build against %s with `-tags noapi` "+
		"(%d packages initialised); the %d packages only the default build initialises take %s (min–max %s). The costliest of them: %s.",
		b.cfg.rounds, fmtDur(totalDef.median()), fmtDur(totalNo.median()), len(noPkgs), len(perPkg), fmtDur(sdk.median()), fmtRange(sdk, fmtDur), strings.Join(top, ", ")), nil
}

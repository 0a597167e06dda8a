// Command bench measures gemini-mcp-server: its overhead per call over a
// bare exec of the CLI, cold start, memory, parallel calls, HTTP throughput,
// an end-to-end call with the real Gemini CLI, the API backend's overhead
// over a bare genai call and start-up cost, and replicas on Redis behind
// HAProxy (CPU per call, Redis memory per session), side by side with other
// MCP servers that wrap the same CLI. Targets are interleaved round by
// round (A B C A B C …) so that drift of the machine hits them all alike;
// the report gives medians with min–max over rounds and ratios against
// ours.
//
//	go run ./workshop/bench [-rounds N] [-calls N] [-only overhead,cold,memory,parallel,http,e2e,api,warm,first,replicas] [-out FILE] [-quick] [-peers=false]
//
// See docs/contributing.md, "Benchmarks", for what each number means.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Section names for -only.
const (
	secOverhead = "overhead"
	secCold     = "cold"
	secMemory   = "memory"
	secParallel = "parallel"
	secHTTP     = "http"
	secE2E      = "e2e"
	secAPI      = "api"
	secWarm     = "warm"
	secFirst    = "first"
	secReplicas = "replicas"
)

var allSections = []string{secOverhead, secCold, secMemory, secParallel, secHTTP, secE2E, secAPI, secWarm, secFirst, secReplicas}

type config struct {
	warmCalls   int           // calls per row of the warm series
	rounds      int           // rounds per section
	batch       int           // sequential calls per target per round (overhead)
	calls       int           // calls in the memory run
	only        []string      // sections to run
	out         string        // markdown file to write
	quick       bool          // a fast smoke run
	peers       bool          // measure the npm peers too
	install     bool          // may run npm ci
	gemini      string        // the real CLI, for e2e
	fake        string        // a prebuilt fake CLI (tests)
	httpTime    time.Duration // per client concurrency per round
	serverFlags []string      // extra flags for every run of our server
	command     string        // how the bench was invoked, for the report
}

func (c *config) wants(sec string) bool { return slices.Contains(c.only, sec) }

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &config{install: true}
	fs.IntVar(&c.rounds, "rounds", 7, "rounds per measurement; targets are interleaved within each round")
	fs.IntVar(&c.batch, "batch", 20, "sequential calls per target per round in the overhead run (the round's value is their median)")
	fs.IntVar(&c.calls, "calls", 1000, "calls in the memory run")
	fs.IntVar(&c.warmCalls, "warm-calls", 300, "calls per row of the warm series (real CLI)")
	only := fs.String("only", strings.Join(allSections, ","), "comma-separated sections to run: "+strings.Join(allSections, ","))
	fs.StringVar(&c.out, "out", "", "also write the markdown report to this file")
	fs.BoolVar(&c.quick, "quick", false, "a fast smoke run: 2 rounds, 5 calls a batch, 50 calls for memory, short HTTP runs (unless given explicitly)")
	fs.BoolVar(&c.peers, "peers", true, "also measure the other MCP servers pinned in bench/peers (installed with npm ci into a cache directory)")
	fs.BoolVar(&c.install, "install", true, "allow npm ci of the peers and of the pinned real Gemini CLI (e2e/npm) when they are not in the cache")
	fs.StringVar(&c.gemini, "gemini", "", "the real Gemini CLI for the end-to-end run (default: $GEMINI_MCP_E2E_GEMINI, else the pinned e2e/npm install)")
	fs.DurationVar(&c.httpTime, "http-time", 2*time.Second, "how long each HTTP client concurrency runs per round")
	serverFlags := fs.String("server-flags", "", "extra flags for every run of gemini-mcp-server, space-separated (e.g. \"--warm-processes 4\")")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: go run ./workshop/bench [flags]\n\nMeasures gemini-mcp-server against a bare exec of the CLI and against other MCP servers wrapping the Gemini CLI.\n\nFlags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if c.quick {
		if !set["rounds"] {
			c.rounds = 2
		}
		if !set["batch"] {
			c.batch = 5
		}
		if !set["calls"] {
			c.calls = 50
		}
		if !set["warm-calls"] {
			c.warmCalls = 20
		}
		if !set["http-time"] {
			c.httpTime = 300 * time.Millisecond
		}
	}
	if c.rounds < 1 || c.batch < 1 || c.calls < 10 {
		return nil, errors.New("-rounds and -batch must be at least 1, -calls at least 10")
	}
	for _, s := range strings.Split(*only, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !slices.Contains(allSections, s) {
			return nil, fmt.Errorf("-only: unknown section %q (have %s)", s, strings.Join(allSections, ","))
		}
		c.only = append(c.only, s)
	}
	c.serverFlags = strings.Fields(*serverFlags)
	c.command = "go run ./workshop/bench"
	for _, a := range args {
		c.command += " " + shellQuote(a)
	}
	return c, nil
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=.,/:+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func main() {
	serveNoopIfAsked()
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err = run(ctx, cfg, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// bench is one run: what was built and installed, and the report so far.
type bench struct {
	cfg       *config
	log       io.Writer
	root, tmp string

	serverBin, serverVersion string
	serverNoAPI              string // the same built with -tags noapi
	noop                     string // an empty Go program
	noopServer               string // the no-op go-sdk MCP server over stdio (bench/noopserver)
	defaultBackend           string // --backend's default; "" when the build has no --backend
	fake, fakeDir            string
	fakeHomes                string // where the fake CLI's homes go, if not in each sandbox
	node, nodeVersion        string
	peers                    []*target
	realCLI, realDir         string
	realWhy                  string // why there is no real CLI

	rep       *report
	loadStart string // 1-minute load average when the run began
}

// run runs the selected sections and writes the report to stdout (and
// cfg.out). Progress goes to log. Every process it starts is waited for
// and its temporary directory is gone when it returns.
func run(ctx context.Context, cfg *config, stdout, log io.Writer) (err error) {
	if runtime.GOOS != "linux" {
		return errNotLinuxBench
	}
	b := &bench{cfg: cfg, log: log, rep: &report{}}
	if b.root, err = moduleRoot(ctx); err != nil {
		return err
	}
	if b.tmp, err = os.MkdirTemp("", "gmcp-bench-"); err != nil {
		return err
	}
	defer func() {
		if rerr := os.RemoveAll(b.tmp); rerr != nil && err == nil {
			err = rerr
		}
	}()
	// The fake CLI's homes go to a RAM file system when there is one: the
	// fake stands for a backend that costs nothing, and its session files
	// (a new file per session, rewritten by a rename per turn) cost it more
	// CPU in the kernel than our server uses per call on a file system
	// like this machine's (ext4 without a journal, where every new inode
	// passes the recently deleted ones).
	if fi, serr := os.Stat("/dev/shm"); serr == nil && fi.IsDir() {
		if dir, merr := os.MkdirTemp("/dev/shm", "gmcp-bench-fake-"); merr == nil {
			b.fakeHomes = dir
			defer func() {
				if rerr := os.RemoveAll(dir); rerr != nil && err == nil {
					err = rerr
				}
			}()
		}
	}
	if err := b.setup(ctx); err != nil {
		return err
	}
	b.loadStart = loadAvg()
	type runner struct {
		name string
		fn   func(context.Context) *section
	}
	runners := []runner{
		{secOverhead, b.overhead},
		{secCold, b.coldStart},
		{secMemory, b.memory},
		{secParallel, b.parallel},
		{secHTTP, b.http},
		{secE2E, b.e2e},
		{secAPI, b.apiBackend},
		{secWarm, b.warmSeries},
		{secFirst, b.firstChat},
		{secReplicas, b.replicas},
	}
	var failed []string
	for _, r := range runners {
		if !cfg.wants(r.name) {
			continue
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		start := time.Now()
		fmt.Fprintf(log, "== %s\n", r.name)
		s := r.fn(ctx)
		if s.failed != nil {
			failed = append(failed, r.name)
			fmt.Fprintf(log, "== %s FAILED: %v\n", r.name, s.failed)
		}
		fmt.Fprintf(log, "== %s done in %v\n", r.name, time.Since(start).Round(time.Millisecond))
		b.rep.sections = append(b.rep.sections, s)
	}
	b.rep.header = b.header(ctx)
	md := b.rep.markdown()
	fmt.Fprint(stdout, md)
	if cfg.out != "" {
		if err := os.WriteFile(cfg.out, []byte(md), 0o644); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("sections failed: %s", strings.Join(failed, ", "))
	}
	return ctx.Err()
}

var errNotLinuxBench = errors.New("the bench runs on Linux only (it reads /proc/<pid>/status)")

// setup builds our server and the fake CLI, and installs the peers and the
// real CLI as far as the selected sections need them.
func (b *bench) setup(ctx context.Context) error {
	cfg := b.cfg
	b.serverBin = filepath.Join(b.tmp, "bin", "gemini-mcp-server")
	fmt.Fprintln(b.log, "building ./cmd/gemini-mcp-server")
	if err := buildServer(ctx, b.root, b.serverBin); err != nil {
		return err
	}
	if cfg.wants(secAPI) {
		b.serverNoAPI = filepath.Join(b.tmp, "bin", "gemini-mcp-server-noapi")
		fmt.Fprintln(b.log, "building ./cmd/gemini-mcp-server -tags noapi")
		if err := buildServer(ctx, b.root, b.serverNoAPI, "-tags", "noapi"); err != nil {
			return err
		}
	}
	b.serverVersion = strings.TrimPrefix(versionOf(ctx, b.serverBin, "--version"), "gemini-mcp-server ")
	if m := defaultBackendRE.FindStringSubmatch(helpText(ctx, b.serverBin)); m != nil {
		b.defaultBackend = m[1]
	}
	if cfg.wants(secCold) || cfg.wants(secAPI) {
		b.noop = filepath.Join(b.tmp, "bin", "noop")
		if err := buildNoop(ctx, filepath.Join(b.tmp, "noop-src"), b.noop); err != nil {
			return err
		}
	}
	if cfg.wants(secCold) || cfg.wants(secMemory) {
		b.noopServer = filepath.Join(b.tmp, "bin", "noopserver")
		fmt.Fprintln(b.log, "building ./bench/noopserver")
		if err := buildNoopServer(ctx, b.root, b.noopServer); err != nil {
			return err
		}
	}
	b.fakeDir = filepath.Join(b.tmp, "fake")
	if cfg.fake != "" {
		if err := linkGemini(cfg.fake, b.fakeDir); err != nil {
			return err
		}
		b.fake = filepath.Join(b.fakeDir, "gemini")
	} else {
		fmt.Fprintln(b.log, "building the fake gemini CLI")
		var err error
		if b.fake, err = buildFake(ctx, b.root, b.fakeDir); err != nil {
			return err
		}
	}
	needPeers := cfg.peers && slices.ContainsFunc(cfg.only, func(s string) bool { return s != secHTTP && s != secAPI && s != secReplicas })
	if needPeers {
		var err error
		if b.node, err = exec.LookPath("node"); err != nil {
			return fmt.Errorf("the peers need Node.js (or run with -peers=false): %w", err)
		}
		b.nodeVersion = versionOf(ctx, b.node, "--version")
		if !cfg.install {
			return errors.New("-install=false: the peers need npm ci (or run with -peers=false)")
		}
		dir, err := npmCI(ctx, filepath.Join(b.root, "bench", "peers"), "bench-peers", b.log)
		if err != nil {
			return err
		}
		for _, spec := range peerSpecs {
			t, err := peerTarget(b.node, filepath.Join(dir, "node_modules"), spec)
			if err != nil {
				return err
			}
			b.peers = append(b.peers, t)
		}
	}
	if cfg.wants(secE2E) || cfg.wants(secWarm) || cfg.wants(secFirst) {
		b.realCLI, b.realWhy = findRealCLI(ctx, cfg, b.root, b.log)
		if b.realCLI != "" {
			b.realDir = filepath.Join(b.tmp, "real")
			if err := linkGemini(b.realCLI, b.realDir); err != nil {
				return err
			}
		}
	}
	return nil
}

// targets is our server as it runs by default (with extra flags),
// followed by the peers.
func (b *bench) targets(extra ...string) []*target {
	args := append(append([]string{}, b.cfg.serverFlags...), extra...)
	return append([]*target{ours(b.serverBin, b.serverVersion, "gemini-mcp-server", b.backend(), args...)}, b.peers...)
}

// stdioTargets is targets plus, when this build has --backend, our server
// with its other backend, for information: the ratios and targets are
// about the default.
func (b *bench) stdioTargets(extra ...string) []*target {
	t := b.targets(extra...)
	if other := b.otherBackend(); other != "" {
		args := append(append([]string{}, b.cfg.serverFlags...), extra...)
		t = append(t, ours(b.serverBin, b.serverVersion, "gemini-mcp-server --backend "+other, other, append(args, "--backend", other)...))
	}
	return t
}

// backend is the backend our server runs with: one chosen with
// -server-flags, else its default.
func (b *bench) backend() string {
	f := b.cfg.serverFlags
	for i, a := range f {
		a = "-" + strings.TrimLeft(a, "-")
		switch {
		case a == "-backend" && i+1 < len(f):
			return effectiveBackend(f[i+1])
		case strings.HasPrefix(a, "-backend="):
			return effectiveBackend(strings.TrimPrefix(a, "-backend="))
		}
	}
	return effectiveBackend(b.defaultBackend)
}

// effectiveBackend is the backend --backend name runs here: the bench
// always gives the server a gemini executable, so auto runs warm.
func effectiveBackend(name string) string {
	if name == "auto" {
		return backendWarm
	}
	return name
}

func (b *bench) otherBackend() string {
	switch b.backend() {
	case backendWarm:
		return backendOneshot
	case backendOneshot:
		return backendWarm
	}
	return ""
}

// defaultBackendRE finds --backend's default in --help.
var defaultBackendRE = regexp.MustCompile(`(?s)\n  -backend string\n[^\n]*\(default "([a-z]+)"\)`)

// header is the report's preamble: machine, versions, command, method.
func (b *bench) header(ctx context.Context) []string {
	cpu, mem := machine()
	goVersion := strings.TrimSpace(versionOf(ctx, "go", "env", "GOVERSION"))
	lines := []string{
		fmt.Sprintf("- **Command:** `%s` (from the repository root)", b.cfg.command),
		fmt.Sprintf("- **Date:** %s", time.Now().UTC().Format("2006-01-02 15:04 MST")),
		fmt.Sprintf("- **Machine:** %d CPUs (nproc), %s, %.1f GiB memory, %s; 1-minute load average %s at the start, %s at the end",
			runtime.NumCPU(), orUnknown(cpu), mem/(1<<30), kernel(), b.loadStart, loadAvg()),
		fmt.Sprintf("- **gemini-mcp-server:** %s, built with %s (`go build`, not `go run`); default backend: %s", b.serverVersion, goVersion, orNone(b.defaultBackend)),
		fmt.Sprintf("- **Fake gemini CLI:** internal/geminitest/fakegemini, `--version` %s; its session files %s", versionOf(ctx, b.fake, "--version"), fakeHomesNote(b.fakeHomes)),
	}
	if len(b.peers) > 0 {
		var ps []string
		for _, p := range b.peers {
			ps = append(ps, p.Name+" "+p.Version)
		}
		lines = append(lines, fmt.Sprintf("- **Peers** (npm, pinned in bench/peers/package-lock.json, run with Node.js %s): %s", b.nodeVersion, strings.Join(ps, ", ")))
	} else {
		lines = append(lines, "- **Peers:** not measured (-peers=false)")
	}
	if b.realCLI != "" {
		lines = append(lines, fmt.Sprintf("- **Real Gemini CLI** (end-to-end run): %s", versionOf(ctx, b.realCLI, "--version")))
	}
	lines = append(lines, fmt.Sprintf("- **Method:** %d rounds; in each round every target is measured once, in turn (A B C A B C …), so that drift of the machine hits all alike. "+
		"Tables give the median over rounds with min–max; × is the ratio to gemini-mcp-server's median. MB = 10⁶ bytes. "+
		"Every server gets its own HOME, TMPDIR, working directory and a clean environment (no inherited GEMINI_* variables or credentials); "+
		"`gemini` is found through PATH, whose first directory holds only the fake (or a link to the real CLI). "+
		"Every prompt is unique and every answer is checked to echo it, so no server can answer from a cache.", b.cfg.rounds))
	return lines
}

func orNone(s string) string {
	if s == "" {
		return "one-shot (this build has no --backend)"
	}
	return "`" + s + "`"
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown CPU"
	}
	return s
}

// fakeHomesNote says where the fake CLI kept its session files.
func fakeHomesNote(dir string) string {
	if dir == "" {
		return "in each target's sandbox (no /dev/shm)"
	}
	return "on a RAM file system (/dev/shm), so that they cost the instant backend next to nothing"
}

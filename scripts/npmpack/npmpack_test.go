package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	// envNPMDir names the directory `go run ./scripts/npmpack` wrote:
	// the package directories and their tarballs (scripts/test.sh sets it).
	envNPMDir = "GEMINI_MCP_NPM_DIR"
	// envNPMRequired, set to 1 (scripts/test.sh does), fails the tests of
	// the packed packages rather than skipping them when envNPMDir is
	// unset; so does $CI.
	envNPMRequired = "GEMINI_MCP_NPM_REQUIRED"
	// envNode names the Node.js to run the packages with (the interop
	// tools' Node 22); else node in PATH.
	envNode = "GEMINI_MCP_INTEROP_NODE"

	maxTarballBytes = 64 << 20
	maxTarEntries   = 64
)

func TestNPMVersion(t *testing.T) {
	for in, want := range map[string]string{
		"1.2.3":                   "1.2.3",
		"0.1.0-rc.1":              "0.1.0-rc.1",
		"0.0.1-snapshot+abc1234":  "0.0.1-snapshot",
		"0.0.1-snapshot+none":     "0.0.1-snapshot",
		"1.0.0+build.5":           "1.0.0",
		"v1.2.3":                  "",
		"1.2":                     "",
		"01.2.3":                  "",
		"1.2.3-":                  "",
		"1.2.3 ":                  "",
		"1.2.3-x;rm -rf /":        "",
		"1.2.3-snapshot+abc/../x": "",
	} {
		got, err := npmVersion(in)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("npmVersion(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestPlatformsOf(t *testing.T) {
	bin := func(goos, goarch string) artifact {
		return artifact{Type: "Binary", Goos: goos, Goarch: goarch, Path: "dist/x/gemini-mcp-server"}
	}
	got, err := platformsOf([]artifact{bin("windows", "arm64"), bin("linux", "amd64"), {Type: "Archive", Goos: "linux", Goarch: "amd64"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].name != "@gemini-mcp-server/linux-x64" || got[0].os != "linux" || got[0].cpu != "x64" ||
		got[1].name != "@gemini-mcp-server/win32-arm64" || got[1].os != "win32" {
		t.Errorf("platformsOf: %+v", got)
	}
	for name, arts := range map[string][]artifact{
		"unknown platform": {bin("freebsd", "amd64")},
		"twice":            {bin("linux", "amd64"), bin("linux", "amd64")},
		"none":             {{Type: "Archive"}},
	} {
		if _, err := platformsOf(arts); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// packed is what the tests of the packed packages share: the tarballs
// of the launcher and of this machine's platform, their version, and the
// Node.js to run them with.
type packed struct {
	dir, version       string
	launcher, platform string // tarballs
	platformName       string // @gemini-mcp-server/<os>-<cpu>
	nodeBin            string // a directory of node, npm, npx and sh only
}

var (
	packedOnce sync.Once
	packedVal  packed
	packedErr  error
)

// packedPackages finds the output of npmpack in $GEMINI_MCP_NPM_DIR, and
// makes a directory holding node, npm, npx and sh (npx runs a package's
// command through sh) and nothing else, for PATH.
func packedPackages(t *testing.T) packed {
	t.Helper()
	dir := os.Getenv(envNPMDir)
	if dir == "" {
		msg := envNPMDir + " is not set: it must name the directory `go run ./scripts/npmpack` wrote (scripts/test.sh runs it after the snapshot release)"
		if os.Getenv("CI") != "" || os.Getenv(envNPMRequired) == "1" {
			t.Fatalf("%s; required because CI or %s=1 is set", msg, envNPMRequired)
		}
		t.Skip(msg)
	}
	packedOnce.Do(func() { packedVal, packedErr = findPacked(dir) })
	if packedErr != nil {
		t.Fatal(packedErr)
	}
	return packedVal
}

func findPacked(dir string) (packed, error) {
	p := packed{dir: dir}
	var pj struct{ Version string }
	if err := readJSON(filepath.Join(dir, launcherName, "package.json"), &pj); err != nil {
		return p, err
	}
	p.version = pj.Version
	o, c := npmOS[runtime.GOOS], npmCPU[runtime.GOARCH]
	if o == "" || c == "" {
		return p, errors.New("no npm package is made for this platform " + runtime.GOOS + "/" + runtime.GOARCH)
	}
	p.platformName = scope + o + "-" + c
	p.launcher = filepath.Join(dir, launcherName+"-"+p.version+".tgz")
	p.platform = filepath.Join(dir, launcherName+"-"+o+"-"+c+"-"+p.version+".tgz")
	for _, f := range []string{p.launcher, p.platform} {
		if _, err := os.Stat(f); err != nil {
			return p, err
		}
	}
	// Made once for all the tests; TestMain removes it.
	nodeBin, err := os.MkdirTemp("", "npmpack-node-")
	if err != nil {
		return p, err
	}
	cleanups = append(cleanups, func() { os.RemoveAll(nodeBin) })
	node := os.Getenv(envNode)
	if node == "" {
		if node, err = exec.LookPath("node"); err != nil {
			return p, err
		}
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		return p, err
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		return p, err
	}
	npmCLI, err := filepath.EvalSymlinks(npm)
	if err != nil {
		return p, err
	}
	links := map[string]string{"node": node, "npm": npmCLI, "npx": filepath.Join(filepath.Dir(npmCLI), "npx-cli.js"), "sh": sh}
	for name, target := range links {
		if target, err = filepath.EvalSymlinks(target); err != nil {
			return p, err
		}
		if err := os.Symlink(target, filepath.Join(nodeBin, name)); err != nil {
			return p, err
		}
	}
	p.nodeBin = nodeBin
	return p, nil
}

var cleanups []func()

func TestMain(m *testing.M) {
	code := m.Run()
	for _, c := range cleanups {
		c()
	}
	os.Exit(code)
}

// prefix is an npm prefix with the packages installed.
type prefix struct {
	p    packed
	dir  string
	home string
}

// env is the environment of a command run in the prefix: PATH holds the
// node directory and the prefix's node_modules/.bin only, and npm's
// registry is a closed loopback port, so that nothing can be fetched.
func (x prefix) env(extra ...string) []string {
	return append([]string{
		"PATH=" + x.p.nodeBin + string(os.PathListSeparator) + filepath.Join(x.dir, "node_modules", ".bin"),
		"HOME=" + x.home,
		"npm_config_cache=" + filepath.Join(x.home, ".npm"),
		"npm_config_registry=http://127.0.0.1:9/",
		"npm_config_offline=true",
		"npm_config_update_notifier=false",
		"npm_config_fund=false",
		"npm_config_audit=false",
	}, extra...)
}

// install installs tarballs into a fresh prefix with npm, offline.
func install(t *testing.T, p packed, args ...string) prefix {
	t.Helper()
	x := prefix{p: p, dir: t.TempDir(), home: t.TempDir()}
	cmd := x.command(t, "npm", append([]string{"install", "--prefix", x.dir, "--no-package-lock"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install %q: %v\n%s", args, err, out)
	}
	return x
}

// command is a program of the node directory, run in the prefix.
func (x prefix) command(t *testing.T, name string, args ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, filepath.Join(x.p.nodeBin, name), args...)
	cmd.Dir, cmd.Env, cmd.WaitDelay = x.dir, x.env("GEMINI_MCP_STATE_DIR="+t.TempDir(), "GEMINI_API_KEY=npm-test-key"), 5*time.Second
	return cmd
}

// TestNPMPackageContents reads the packed tarballs: the launcher names
// every platform package at exactly its version as an optional
// dependency, carries the MCP Registry's mcpName and runs nothing at
// install time; each platform package declares its os and cpu and holds
// its binary, executable, with the licence files.
func TestNPMPackageContents(t *testing.T) {
	t.Parallel()
	p := packedPackages(t)
	launcher := readTarball(t, p.launcher)
	var raw map[string]any
	if err := json.Unmarshal(launcher["package/package.json"].data, &raw); err != nil {
		t.Fatal(err)
	}
	if raw["name"] != launcherName || raw["version"] != p.version || raw["mcpName"] != "io.github.gemini-mcp-server/gemini-mcp-server" {
		t.Errorf("launcher package.json: name %v version %v mcpName %v", raw["name"], raw["version"], raw["mcpName"])
	}
	if _, ok := raw["scripts"]; ok {
		t.Errorf("the launcher has scripts (nothing may run at install time): %v", raw["scripts"])
	}
	if bin, _ := raw["bin"].(map[string]any); bin[binaryName] != "bin/"+binaryName+".js" {
		t.Errorf("launcher bin: %v", raw["bin"])
	}
	for _, f := range []string{"package/bin/" + binaryName + ".js", "package/LICENSE", "package/NOTICE", "package/README.md"} {
		if _, ok := launcher[f]; !ok {
			t.Errorf("the launcher lacks %s", f)
		}
	}
	deps, _ := raw["optionalDependencies"].(map[string]any)
	tarballs, _ := filepath.Glob(filepath.Join(p.dir, launcherName+"-*-"+p.version+".tgz"))
	if len(deps) != len(npmOS)*len(npmCPU) || len(tarballs) != len(deps) {
		t.Errorf("the launcher's optionalDependencies %v, the platform tarballs %v: want one for each of %d platforms", deps, tarballs, len(npmOS)*len(npmCPU))
	}
	for _, tb := range tarballs {
		files := readTarball(t, tb)
		var pj struct {
			Name, Version string
			OS, CPU       []string
			Scripts       map[string]string
		}
		if err := json.Unmarshal(files["package/package.json"].data, &pj); err != nil {
			t.Fatalf("%s: %v", tb, err)
		}
		if deps[pj.Name] != p.version || pj.Version != p.version {
			t.Errorf("%s: %s@%s, the launcher asks for %v", tb, pj.Name, pj.Version, deps[pj.Name])
		}
		if len(pj.OS) != 1 || len(pj.CPU) != 1 || pj.Name != scope+pj.OS[0]+"-"+pj.CPU[0] || len(pj.Scripts) > 0 {
			t.Errorf("%s: name %s os %v cpu %v scripts %v", tb, pj.Name, pj.OS, pj.CPU, pj.Scripts)
		}
		exe := "package/bin/" + binaryName
		if len(pj.OS) == 1 && pj.OS[0] == "win32" {
			exe += ".exe"
		}
		if e, ok := files[exe]; !ok || len(e.data) < 1<<20 || e.mode&0o111 == 0 {
			t.Errorf("%s: no executable %s (mode %v, %d bytes)", tb, exe, e.mode, len(e.data))
		}
		for _, f := range append([]string{"README.md"}, platformFiles...) {
			if _, ok := files["package/"+f]; !ok {
				t.Errorf("%s lacks %s", tb, f)
			}
		}
	}
}

// TestNPXStartsServer installs the launcher's and this platform's
// tarballs into a fresh prefix, offline, and has an MCP client start the
// server as the README's registrations do, `npx -y gemini-mcp-server`,
// from the prefix, with PATH holding only Node's directory and the
// prefix's .bin: it initializes, lists the tools and finds chat; the
// server it reaches is the release's binary, out of the platform package.
func TestNPXStartsServer(t *testing.T) {
	t.Parallel()
	p := packedPackages(t)
	x := install(t, p, "--offline", p.launcher, p.platform)
	cmd := x.command(t, "npx", "-y", launcherName)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "npm-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect through npx: %v\n%s", err, stderr.String())
	}
	info := cs.InitializeResult().ServerInfo
	if info.Name != binaryName || !strings.HasPrefix(info.Version, "v"+p.version) {
		t.Errorf("npx started %s %s, want the release's %s v%s", info.Name, info.Version, binaryName, p.version)
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(tools.Tools, func(tl *mcp.Tool) bool { return tl.Name == "chat" }) {
		t.Errorf("tools/list through npx has no chat: %d tools", len(tools.Tools))
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "serving MCP on stdio") {
		t.Errorf("the server's log is not on the client's stderr:\n%s", stderr.String())
	}
}

// TestLauncherExitCode: the launcher (through npx) ends with the
// binary's exit code.
func TestLauncherExitCode(t *testing.T) {
	t.Parallel()
	p := packedPackages(t)
	x := install(t, p, "--offline", p.launcher, p.platform)
	cmd := x.command(t, "npx", "-y", launcherName, "--no-such-flag")
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "flag provided but not defined: -no-such-flag") {
		t.Fatalf("a bad flag through npx: %v, want exit 2 with the server's complaint\n%s", err, out)
	}
	cmd = x.command(t, "npx", "-y", launcherName, "--version")
	out, err = cmd.Output()
	if err != nil || !strings.HasPrefix(string(out), binaryName+" v"+p.version) {
		t.Fatalf("--version through npx: %v %q", err, out)
	}
}

// launcher starts the installed launcher with node, as its bin link
// does, stdin left open; it returns once the server logged that it
// serves.
func launcher(t *testing.T, x prefix) (*exec.Cmd, *lineLog) {
	t.Helper()
	cmd := x.command(t, "node", filepath.Join(x.dir, "node_modules", ".bin", launcherName))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close() })
	log := newLineLog()
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if !log.waitFor(t.Context(), "serving MCP on stdio") {
		t.Fatalf("the server never served:\n%s", log.String())
	}
	return cmd, log
}

// TestLauncherForwardsSIGTERM: SIGTERM to the launcher reaches the
// binary, which stops cleanly although its stdin is still open, and the
// launcher ends with its exit code.
func TestLauncherForwardsSIGTERM(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("no SIGTERM on Windows")
	}
	p := packedPackages(t)
	x := install(t, p, "--offline", p.launcher, p.platform)
	cmd, log := launcher(t, x)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	if err != nil || !strings.Contains(log.String(), "server stopping") {
		t.Fatalf("after SIGTERM: %v, want exit 0 after the server stopped\n%s", err, log.String())
	}
}

// TestLauncherDiesOfBinarysSignal: a binary killed by a signal makes the
// launcher die of the same signal.
func TestLauncherDiesOfBinarysSignal(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("finds the binary's process through /proc")
	}
	p := packedPackages(t)
	x := install(t, p, "--offline", p.launcher, p.platform)
	cmd, log := launcher(t, x)
	pid := cmd.Process.Pid
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", strconv.Itoa(pid), "children"))
	if err != nil {
		t.Fatal(err)
	}
	kids := strings.Fields(string(b))
	if len(kids) != 1 {
		t.Fatalf("the launcher has children %q, want the binary alone", kids)
	}
	child, _ := strconv.Atoi(kids[0])
	if exe, _ := os.Readlink(filepath.Join("/proc", kids[0], "exe")); !strings.HasSuffix(exe, filepath.Join(p.platformName, "bin", binaryName)) {
		t.Fatalf("the launcher's child runs %s, not the platform package's binary", exe)
	}
	if err := syscall.Kill(child, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err = cmd.Wait()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the launcher of a binary killed by SIGKILL ended with %v, want death by SIGKILL\n%s", err, log.String())
	}
}

// TestLauncherWithoutPlatformPackage: the launcher installed without its
// optional dependencies says which package of which platform is
// missing, and fails.
func TestLauncherWithoutPlatformPackage(t *testing.T) {
	t.Parallel()
	p := packedPackages(t)
	x := install(t, p, "--offline", "--omit=optional", p.launcher)
	if _, err := os.Stat(filepath.Join(x.dir, "node_modules", p.platformName)); err == nil {
		t.Fatalf("%s was installed with --omit=optional", p.platformName)
	}
	cmd := x.command(t, "npx", "-y", launcherName)
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "the binary for this platform ("+strings.TrimPrefix(p.platformName, scope)+") is in the package "+p.platformName+", which is not installed") {
		t.Fatalf("without the platform package: exit %d\n%s", cmd.ProcessState.ExitCode(), out)
	}
}

// tarEntry is a regular file of a tarball.
type tarEntry struct {
	data []byte
	mode os.FileMode
}

// readTarball reads an npm tarball's regular files, capped.
func readTarball(t *testing.T, path string) map[string]tarEntry {
	t.Helper()
	b, err := readCapped(path, maxTarballBytes)
	if err != nil {
		t.Fatal(err)
	}
	gz, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	tr := tar.NewReader(gz)
	files := map[string]tarEntry{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(files) >= maxTarEntries {
			t.Fatalf("%s has over %d entries", path, maxTarEntries)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(io.LimitReader(tr, maxTarballBytes*4))
		if err != nil {
			t.Fatalf("%s: %s: %v", path, h.Name, err)
		}
		files[h.Name] = tarEntry{data: data, mode: h.FileInfo().Mode()}
	}
}

// lineLog is a process's stderr that a test waits on.
type lineLog struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
}

func newLineLog() *lineLog { return &lineLog{changed: make(chan struct{})} }

func (l *lineLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	close(l.changed)
	l.changed = make(chan struct{})
	return l.buf.Write(p)
}

func (l *lineLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// waitFor waits until a complete line holds s, or ctx ends.
func (l *lineLog) waitFor(ctx context.Context, s string) bool {
	for {
		l.mu.Lock()
		sc := bufio.NewScanner(bytes.NewReader(l.buf.Bytes()))
		changed := l.changed
		l.mu.Unlock()
		for sc.Scan() {
			if strings.Contains(sc.Text(), s) {
				return true
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

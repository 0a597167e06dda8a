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
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// Caps on what the tests read of a tarball.
const (
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

// TestNPMPackageContents reads the packed tarballs: the launcher names
// every platform package at exactly its version as an optional
// dependency, carries the MCP Registry's mcpName and runs nothing at
// install time; each platform package declares its os and cpu and holds
// its binary, executable, with the licence files.
func TestNPMPackageContents(t *testing.T) {
	t.Parallel()
	p := geminitest.PackedNPM(t)
	launcher := readTarball(t, p.Launcher)
	var raw map[string]any
	if err := json.Unmarshal(launcher["package/package.json"].data, &raw); err != nil {
		t.Fatal(err)
	}
	if raw["name"] != launcherName || raw["version"] != p.Version || raw["mcpName"] != "io.github.gemini-mcp-server/gemini-mcp-server" {
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
	tarballs, _ := filepath.Glob(filepath.Join(p.Dir, launcherName+"-*-"+p.Version+".tgz"))
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
		if deps[pj.Name] != p.Version || pj.Version != p.Version {
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
	p := geminitest.PackedNPM(t)
	x := geminitest.InstallNPM(t, p, "--offline", p.Launcher, p.Platform)
	cmd := x.Command(t, "npx", "-y", launcherName)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "npm-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect through npx: %v\n%s", err, stderr.String())
	}
	info := cs.InitializeResult().ServerInfo
	if info.Name != binaryName || !strings.HasPrefix(info.Version, "v"+p.Version) {
		t.Errorf("npx started %s %s, want the release's %s v%s", info.Name, info.Version, binaryName, p.Version)
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
	p := geminitest.PackedNPM(t)
	x := geminitest.InstallNPM(t, p, "--offline", p.Launcher, p.Platform)
	cmd := x.Command(t, "npx", "-y", launcherName, "--no-such-flag")
	out, err := cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "flag provided but not defined: -no-such-flag") {
		t.Fatalf("a bad flag through npx: %v, want exit 2 with the server's complaint\n%s", err, out)
	}
	cmd = x.Command(t, "npx", "-y", launcherName, "--version")
	out, err = cmd.Output()
	if err != nil || !strings.HasPrefix(string(out), binaryName+" v"+p.Version) {
		t.Fatalf("--version through npx: %v %q", err, out)
	}
}

// launcher starts the installed launcher with node, as its bin link
// does, stdin left open; it returns once the server logged that it
// serves.
func launcher(t *testing.T, x geminitest.NPMPrefix) (*exec.Cmd, *lineLog) {
	t.Helper()
	cmd := x.Command(t, "node", filepath.Join(x.Prefix, "node_modules", ".bin", launcherName))
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

// TestLauncherWithoutPlatformPackage: the launcher installed without its
// optional dependencies says which package of which platform is
// missing, and fails.
func TestLauncherWithoutPlatformPackage(t *testing.T) {
	t.Parallel()
	p := geminitest.PackedNPM(t)
	x := geminitest.InstallNPM(t, p, "--offline", "--omit=optional", p.Launcher)
	if _, err := os.Stat(filepath.Join(x.Prefix, "node_modules", p.PlatformName)); err == nil {
		t.Fatalf("%s was installed with --omit=optional", p.PlatformName)
	}
	cmd := x.Command(t, "npx", "-y", launcherName)
	out, _ := cmd.CombinedOutput()
	if cmd.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "the binary for this platform ("+strings.TrimPrefix(p.PlatformName, scope)+") is in the package "+p.PlatformName+", which is not installed") {
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

// TestRunWritesPackages makes the packages of a small fake release
// without packing them: the launcher names each platform's package at
// the version without build metadata, each platform package holds its
// binary, executable; a release with a bad version or an unknown
// platform is refused before anything is written.
func TestRunWritesPackages(t *testing.T) {
	t.Chdir("../..")
	dist := t.TempDir()
	write := func(name, text string, mode os.FileMode) {
		t.Helper()
		p := filepath.Join(dist, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("linux/gemini-mcp-server", "linux binary", 0o755)
	write("windows/gemini-mcp-server.exe", "windows binary", 0o644)
	arts := `[{"path":"` + filepath.Join(dist, "linux/gemini-mcp-server") + `","type":"Binary","goos":"linux","goarch":"amd64"},` +
		`{"path":"` + filepath.Join(dist, "windows/gemini-mcp-server.exe") + `","type":"Binary","goos":"windows","goarch":"arm64"}]`
	write("artifacts.json", arts, 0o644)
	write("metadata.json", `{"project_name":"gemini-mcp-server","version":"1.2.3-rc.1+abc1234"}`, 0o644)
	out := filepath.Join(t.TempDir(), "npm")
	dirs, err := run(t.Context(), dist, out, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) != 3 {
		t.Fatalf("package directories %v, want the launcher and two platforms", dirs)
	}
	var launcher struct {
		Version              string
		MCPName              string `json:"mcpName"`
		OptionalDependencies map[string]string
	}
	if err := readJSON(filepath.Join(out, launcherName, "package.json"), &launcher); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"@gemini-mcp-server/linux-x64": "1.2.3-rc.1", "@gemini-mcp-server/win32-arm64": "1.2.3-rc.1"}
	if launcher.Version != "1.2.3-rc.1" || launcher.MCPName == "" || len(launcher.OptionalDependencies) != 2 ||
		launcher.OptionalDependencies["@gemini-mcp-server/linux-x64"] != want["@gemini-mcp-server/linux-x64"] ||
		launcher.OptionalDependencies["@gemini-mcp-server/win32-arm64"] != want["@gemini-mcp-server/win32-arm64"] {
		t.Errorf("launcher package.json: %+v", launcher)
	}
	for dir, exe := range map[string]string{"linux-x64": "gemini-mcp-server", "win32-arm64": "gemini-mcp-server.exe"} {
		var pj struct {
			Name, Version string
			OS, CPU       []string
		}
		if err := readJSON(filepath.Join(out, dir, "package.json"), &pj); err != nil {
			t.Fatal(err)
		}
		o, c, _ := strings.Cut(dir, "-")
		if pj.Name != scope+dir || pj.Version != "1.2.3-rc.1" || !slices.Equal(pj.OS, []string{o}) || !slices.Equal(pj.CPU, []string{c}) {
			t.Errorf("%s/package.json: %+v", dir, pj)
		}
		fi, err := os.Stat(filepath.Join(out, dir, "bin", exe))
		if err != nil || fi.Mode()&0o111 == 0 {
			t.Errorf("%s: bin/%s: %v %v", dir, exe, fi, err)
		}
		for _, f := range append([]string{"README.md"}, platformFiles...) {
			if _, err := os.Stat(filepath.Join(out, dir, f)); err != nil {
				t.Errorf("%s: %v", dir, err)
			}
		}
	}

	write("metadata.json", `{"project_name":"gemini-mcp-server","version":"v1.2.3"}`, 0o644)
	if _, err := run(t.Context(), dist, out, false); err == nil || !strings.Contains(err.Error(), "not X.Y.Z") {
		t.Errorf("a v-prefixed version: %v", err)
	}
	write("metadata.json", `{"project_name":"gemini-mcp-server","version":"1.2.3"}`, 0o644)
	write("artifacts.json", `[{"path":"x","type":"Binary","goos":"plan9","goarch":"amd64"}]`, 0o644)
	if _, err := run(t.Context(), dist, out, false); err == nil || !strings.Contains(err.Error(), "plan9/amd64") {
		t.Errorf("an unknown platform: %v", err)
	}
	if _, err := os.Stat(filepath.Join(out, launcherName, "package.json")); err != nil {
		t.Errorf("a refused release changed the output: %v", err)
	}
}

package geminitest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

const (
	// EnvNPMDir names the directory `go run ./scripts/npmpack` wrote: the
	// npm package directories and their tarballs (scripts/test.sh sets it).
	EnvNPMDir = "GEMINI_MCP_NPM_DIR"
	// EnvNPMRequired set to 1 (scripts/test.sh does) fails the tests of
	// the npm packages rather than skipping them when EnvNPMDir is unset;
	// so does $CI.
	EnvNPMRequired = "GEMINI_MCP_NPM_REQUIRED"
	// EnvInteropNode names the Node.js the npm packages run with (the
	// interop tools' Node 22); else node in PATH.
	EnvInteropNode = "GEMINI_MCP_INTEROP_NODE"

	// NPMLauncher is the npm package (and command) that starts the server.
	NPMLauncher = "gemini-mcp-server"
	// NPMScope is the scope of the platform packages.
	NPMScope = "@gemini-mcp-server/"
)

// NPMPackages are the packed npm packages of a release: the launcher's
// tarball and this machine's platform package's.
type NPMPackages struct {
	Dir, Version       string
	Launcher, Platform string // tarballs
	PlatformName       string // @gemini-mcp-server/<os>-<cpu>
	// NodeBin is a directory holding node, npm, npx and sh (npx runs a
	// package's command through sh) and nothing else, for PATH.
	NodeBin string
}

// PackedNPM finds the output of scripts/npmpack in $GEMINI_MCP_NPM_DIR,
// skipping the test when it is unset (failing it under CI or
// GEMINI_MCP_NPM_REQUIRED=1).
func PackedNPM(t testing.TB) NPMPackages {
	t.Helper()
	dir := os.Getenv(EnvNPMDir)
	if dir == "" {
		msg := EnvNPMDir + " is not set: it must name the directory `go run ./scripts/npmpack` wrote (scripts/test.sh runs it after the snapshot release)"
		if os.Getenv("CI") != "" || os.Getenv(EnvNPMRequired) == "1" {
			t.Fatalf("%s; required because CI or %s=1 is set", msg, EnvNPMRequired)
		}
		t.Skip(msg)
	}
	p := NPMPackages{Dir: dir}
	b, err := os.ReadFile(filepath.Join(dir, NPMLauncher, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pj struct{ Version string }
	if err := json.Unmarshal(b, &pj); err != nil || pj.Version == "" {
		t.Fatalf("%s/%s/package.json: no version (%v)", dir, NPMLauncher, err)
	}
	p.Version = pj.Version
	o := map[string]string{"linux": "linux", "darwin": "darwin", "windows": "win32"}[runtime.GOOS]
	c := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	if o == "" || c == "" {
		t.Fatalf("no npm package is made for this platform %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	p.PlatformName = NPMScope + o + "-" + c
	p.Launcher = filepath.Join(dir, NPMLauncher+"-"+p.Version+".tgz")
	p.Platform = filepath.Join(dir, NPMLauncher+"-"+o+"-"+c+"-"+p.Version+".tgz")
	for _, f := range []string{p.Launcher, p.Platform} {
		if _, err := os.Stat(f); err != nil {
			t.Fatal(err)
		}
	}
	node := os.Getenv(EnvInteropNode)
	if node == "" {
		if node, err = exec.LookPath("node"); err != nil {
			t.Fatal(err)
		}
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatal(err)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	npmCLI, err := filepath.EvalSymlinks(npm)
	if err != nil {
		t.Fatal(err)
	}
	p.NodeBin = t.TempDir()
	links := map[string]string{"node": node, "npm": npmCLI, "npx": filepath.Join(filepath.Dir(npmCLI), "npx-cli.js"), "sh": sh}
	for name, target := range links {
		if target, err = filepath.EvalSymlinks(target); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(p.NodeBin, name)); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// NPMPrefix is an npm prefix (a fresh directory) with packages installed.
type NPMPrefix struct {
	NPMPackages
	Prefix string // the prefix: node_modules, node_modules/.bin
	Home   string // HOME and npm's cache
}

// InstallNPM installs into a fresh prefix with `npm install --prefix`,
// args naming the tarballs and any flags (--offline, --omit=optional).
func InstallNPM(t testing.TB, p NPMPackages, args ...string) NPMPrefix {
	t.Helper()
	x := NPMPrefix{NPMPackages: p, Prefix: t.TempDir(), Home: t.TempDir()}
	cmd := x.Command(t, "npm", append([]string{"install", "--prefix", x.Prefix, "--no-package-lock"}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install %q: %v\n%s", args, err, out)
	}
	return x
}

// Bin is the prefix's node_modules/.bin, where npm links the launcher.
func (x NPMPrefix) Bin() string { return filepath.Join(x.Prefix, "node_modules", ".bin") }

// Env is the environment of a command run from the prefix: PATH holds
// the node directory and the prefix's node_modules/.bin only (npx finds
// the launcher there), and npm's registry is a closed loopback port, so
// that nothing can be fetched.
func (x NPMPrefix) Env(extra ...string) []string {
	return append([]string{
		"PATH=" + x.NodeBin + string(os.PathListSeparator) + x.Bin(),
		"HOME=" + x.Home,
		"npm_config_cache=" + filepath.Join(x.Home, ".npm"),
		"npm_config_registry=http://127.0.0.1:9/",
		"npm_config_offline=true",
		"npm_config_update_notifier=false",
		"npm_config_fund=false",
		"npm_config_audit=false",
	}, extra...)
}

// Command is a program of the node directory (node, npm, npx) run in the
// prefix with Env, a fresh state directory and a Gemini API key, within
// 3 minutes.
func (x NPMPrefix) Command(t testing.TB, name string, args ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, filepath.Join(x.NodeBin, name), args...)
	cmd.Dir, cmd.Env, cmd.WaitDelay = x.Prefix, x.Env("GEMINI_MCP_STATE_DIR="+t.TempDir(), "GEMINI_API_KEY=npm-test-key"), 5*time.Second
	return cmd
}

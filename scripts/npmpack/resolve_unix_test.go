//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// How the launcher finds the platform package: in its own install only,
// at its own version.

// plant writes a platform package named name at version into dir (a
// package directory), whose binary, a script, leaves a file behind to
// show it ran; it returns that file's path.
func plant(t *testing.T, dir, name, version string) (ran string) {
	t.Helper()
	ran = filepath.Join(t.TempDir(), "planted-ran")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	pj, _ := json.Marshal(map[string]any{"name": name, "version": version, "bin": map[string]string{}})
	if err := os.WriteFile(filepath.Join(dir, "package.json"), pj, 0o644); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\necho planted > '" + ran + "'\necho 'planted " + version + "'\n"
	if err := os.WriteFile(filepath.Join(dir, "bin", binaryName), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return ran
}

// runLauncher runs `npx -y gemini-mcp-server --version` in x's prefix.
func runLauncher(t *testing.T, x geminitest.NPMPrefix) (out string, code int) {
	t.Helper()
	cmd := x.Command(t, "npx", "-y", launcherName, "--version")
	b, _ := cmd.CombinedOutput()
	if cmd.ProcessState == nil {
		t.Fatalf("npx did not run: %s", b)
	}
	return string(b), cmd.ProcessState.ExitCode()
}

// TestLauncherIgnoresPlantedPackage: the launcher installed without its
// platform package, below a directory whose node_modules holds one (as
// anyone may plant in a shared /tmp), at another version or at its own,
// does not run it: it says its package is not installed, and fails.
func TestLauncherIgnoresPlantedPackage(t *testing.T) {
	t.Parallel()
	p := geminitest.PackedNPM(t)
	for _, version := range []string{"6.6.6", p.Version} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			x := geminitest.InstallNPM(t, p, "--offline", "--omit=optional", p.Launcher)
			// An ancestor of the prefix, and so of the launcher's own
			// node_modules.
			ran := plant(t, filepath.Join(filepath.Dir(x.Prefix), "node_modules", p.PlatformName), p.PlatformName, version)
			out, code := runLauncher(t, x)
			if _, err := os.Stat(ran); err == nil || strings.Contains(out, "planted") {
				t.Fatalf("the launcher ran the package planted in an ancestor directory (exit %d):\n%s", code, out)
			}
			if code != 1 || !strings.Contains(out, "is in the package "+p.PlatformName+", which is not installed") {
				t.Fatalf("exit %d, want 1 with the missing package named:\n%s", code, out)
			}
		})
	}
}

// TestLauncherRefusesOtherVersion: a platform package in the launcher's
// own install, but of another version than the launcher's, is not run:
// the launcher names both versions, and fails.
func TestLauncherRefusesOtherVersion(t *testing.T) {
	t.Parallel()
	p := geminitest.PackedNPM(t)
	x := geminitest.InstallNPM(t, p, "--offline", p.Launcher, p.Platform)
	ran := plant(t, filepath.Join(x.Prefix, "node_modules", p.PlatformName), p.PlatformName, "6.6.6")
	out, code := runLauncher(t, x)
	if _, err := os.Stat(ran); err == nil || strings.Contains(out, "planted") {
		t.Fatalf("the launcher ran a platform package of another version (exit %d):\n%s", code, out)
	}
	if want := "holds " + p.PlatformName + "@6.6.6, not " + p.PlatformName + "@" + p.Version; code != 1 || !strings.Contains(out, want) {
		t.Fatalf("exit %d, want 1 with %q:\n%s", code, want, out)
	}
}

// TestLauncherNestedPlatformPackage: the platform package nested in the
// launcher's own node_modules, where npm puts a dependency it does not
// hoist, is found and run.
func TestLauncherNestedPlatformPackage(t *testing.T) {
	t.Parallel()
	p := geminitest.PackedNPM(t)
	x := geminitest.InstallNPM(t, p, "--offline", p.Launcher, p.Platform)
	nested := filepath.Join(x.Prefix, "node_modules", launcherName, "node_modules", p.PlatformName)
	if err := os.MkdirAll(filepath.Dir(nested), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(x.Prefix, "node_modules", p.PlatformName), nested); err != nil {
		t.Fatal(err)
	}
	if out, code := runLauncher(t, x); code != 0 || !strings.HasPrefix(out, binaryName+" v"+p.Version) {
		t.Fatalf("the nested platform package: exit %d\n%s", code, out)
	}
}

// TestLauncherGlobalInstall: installed with `npm install -g`, the launcher
// (in the prefix's lib/node_modules, its command linked into the prefix's
// bin) finds the platform package npm installed with it.
func TestLauncherGlobalInstall(t *testing.T) {
	t.Parallel()
	p := geminitest.PackedNPM(t)
	x := geminitest.NPMPrefix{NPMPackages: p, Prefix: t.TempDir(), Home: t.TempDir()}
	if out, err := x.Command(t, "npm", "install", "-g", "--prefix", x.Prefix, "--offline", p.Launcher, p.Platform).CombinedOutput(); err != nil {
		t.Fatalf("npm install -g: %v\n%s", err, out)
	}
	cmd := x.Command(t, "node", filepath.Join(x.Prefix, "bin", launcherName), "--version")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasPrefix(string(out), binaryName+" v"+p.Version) {
		t.Fatalf("the globally installed launcher: %v\n%s", err, out)
	}
}

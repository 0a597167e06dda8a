package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// moduleRoot is the directory of the workshop's go.mod (workshop/ in the
// repository), where the bench's own files are; the product's is its parent.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("run the bench from inside the gemini-mcp-server repository")
	}
	dir := filepath.Dir(gomod)
	// From the repository's root (go run ./workshop/bench, through
	// go.work) GOMOD is the product's; the bench's files are the
	// workshop's.
	if _, err := os.Stat(filepath.Join(dir, "workshop", "go.mod")); err == nil {
		dir = filepath.Join(dir, "workshop")
	}
	return dir, nil
}

// buildServer builds our server the way a user does (never go run, whose
// compile time would swamp a cold start).
func buildServer(ctx context.Context, root, out string, flags ...string) error {
	args := append(append([]string{"build"}, flags...), "-o", out, geminitest.ServerPackage)
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = root
	// Static, as the README builds it.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, b)
	}
	return nil
}

// buildNoopServer builds bench/noopserver, the no-op go-sdk MCP server over
// stdio, as our server is built (static, go build).
func buildNoopServer(ctx context.Context, root, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./bench/noopserver")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./bench/noopserver: %w\n%s", err, b)
	}
	return nil
}

// buildFake builds the fake CLI into dir/gemini. geminitest.BuildFake
// would do the same in a directory of its own; the bench keeps everything
// in its temporary directory so that one RemoveAll cleans up.
func buildFake(ctx context.Context, root, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, "gemini")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, geminitest.FakePackage)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", geminitest.FakePackage, err, b)
	}
	return out, nil
}

// buildNoop builds an empty Go program: the floor under any Go server's
// cold start on this machine (exec, dynamic loading, runtime start).
func buildNoop(ctx context.Context, dir, out string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := map[string]string{
		"go.mod":  "module noop\n\ngo 1.22\n",
		"main.go": "// Command noop does nothing: the exec floor for the cold-start table.\npackage main\n\nfunc main() {}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, ".")
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the no-op program: %w\n%s", err, b)
	}
	return nil
}

// linkGemini makes dir/gemini a link to the CLI at path, so that a
// directory holding only `gemini` can go first in every server's PATH.
func linkGemini(path, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	return os.Symlink(abs, filepath.Join(dir, "gemini"))
}

// cacheDir is where npm installs go, shared with scripts/test.sh.
func cacheDir() string {
	if d := os.Getenv("GEMINI_MCP_CACHE"); d != "" {
		return d
	}
	base := os.Getenv("XDG_CACHE_HOME")
	if base == "" {
		home, _ := os.UserHomeDir()
		base = filepath.Join(home, ".cache")
	}
	return filepath.Join(base, "gemini-mcp-server")
}

// npmCI installs the lock file in srcDir into <cache>/<prefix>-<hash> with
// npm ci, unless that directory is complete already, and returns it. The
// hash is the one scripts/test.sh uses (sha256 of package.json followed by
// package-lock.json, 16 hex digits), so both share the real CLI's install.
func npmCI(ctx context.Context, srcDir, prefix string, log io.Writer) (string, error) {
	pj, err := os.ReadFile(filepath.Join(srcDir, "package.json"))
	if err != nil {
		return "", err
	}
	lock, err := os.ReadFile(filepath.Join(srcDir, "package-lock.json"))
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(append(append([]byte{}, pj...), lock...))
	dir := filepath.Join(cacheDir(), prefix+"-"+hex.EncodeToString(sum[:])[:16])
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err == nil {
		return dir, nil
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return "", fmt.Errorf("npm is needed to install %s: %w", srcDir, err)
	}
	fmt.Fprintf(log, "npm ci %s into %s\n", filepath.Join(srcDir, "package-lock.json"), dir)
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return "", err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", err
	}
	for name, data := range map[string][]byte{"package.json": pj, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			return "", err
		}
	}
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tmp
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("npm ci in %s: %w", tmp, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	return dir, nil
}

// findRealCLI returns the real Gemini CLI: the -gemini flag, else
// $GEMINI_MCP_E2E_GEMINI, else the pinned e2e/npm install (made here if
// install is allowed). "" with a reason when there is none.
func findRealCLI(ctx context.Context, cfg *config, root string, log io.Writer) (string, string) {
	if cfg.gemini != "" {
		return cfg.gemini, ""
	}
	if p := os.Getenv(fakeapi.EnvGemini); p != "" {
		return p, ""
	}
	if !cfg.install {
		return "", "no real Gemini CLI: pass -gemini PATH or set " + fakeapi.EnvGemini
	}
	dir, err := npmCI(ctx, filepath.Join(root, "e2e", "npm"), "npm", log)
	if err != nil {
		return "", "installing the pinned Gemini CLI failed: " + err.Error()
	}
	return filepath.Join(dir, "node_modules", ".bin", "gemini"), ""
}

// versionOf runs path with args and returns its first output line.
func versionOf(ctx context.Context, path string, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdin = nil
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "unknown (" + err.Error() + ")"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(out.String()), "\n")
	return line
}

// helpText is what `bin --help` prints.
func helpText(ctx context.Context, bin string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--help")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	_ = cmd.Run()
	return out.String()
}

// helpMentions reports whether `bin --help` lists flag (with a value, or
// alone on its line, as a boolean flag is).
func helpMentions(ctx context.Context, bin, flag string) bool {
	h := helpText(ctx, bin)
	return strings.Contains(h, "\n  -"+flag+" ") || strings.Contains(h, "\n  -"+flag+"\n") || strings.Contains(h, "--"+flag+" ")
}

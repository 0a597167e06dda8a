// Command npmpack makes the npm packages of a release from GoReleaser's
// dist/ directory: the launcher package gemini-mcp-server (npm/gemini-mcp-server)
// and one package per release platform, @gemini-mcp-server/<os>-<cpu>
// (npm/platform), each holding that platform's binary; then it runs
// `npm pack` in each, leaving the tarballs in the output directory.
//
//	go run ./scripts/npmpack [-dist dist] [-out dist/npm]
//
// The packages carry the release's version without its build metadata
// (0.0.1-snapshot+abc1234 is 0.0.1-snapshot: npm drops build metadata
// anyway), the launcher naming every platform package at exactly that
// version as an optional dependency. It runs in the repository's root.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/proc"
)

const (
	launcherName = "gemini-mcp-server"
	scope        = "@gemini-mcp-server/"
	binaryName   = "gemini-mcp-server"
	templateDir  = "npm"

	// Caps on what is read of dist/.
	maxMetadataBytes = 4 << 20
	maxBinaryBytes   = 256 << 20
	maxArtifacts     = 256
)

// npmOS and npmCPU are npm's names (process.platform, process.arch) of
// Go's GOOS and GOARCH of the release platforms.
var (
	npmOS  = map[string]string{"linux": "linux", "darwin": "darwin", "windows": "win32"}
	npmCPU = map[string]string{"amd64": "x64", "arm64": "arm64"}
)

// The files of the repository's root each package carries.
var (
	launcherFiles = []string{"LICENSE", "NOTICE", "README.md"}
	platformFiles = []string{"LICENSE", "NOTICE", "THIRD_PARTY_NOTICES.md", "THIRD_PARTY_LICENSES.txt"}
)

func main() {
	dist := flag.String("dist", "dist", "GoReleaser's dist/ directory (metadata.json, artifacts.json, the binaries)")
	out := flag.String("out", "", "where the package directories and tarballs go (default: <dist>/npm)")
	noPack := flag.Bool("no-pack", false, "write the package directories only, without npm pack")
	flag.Parse()
	if *out == "" {
		*out = filepath.Join(*dist, "npm")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	tarballs, err := run(ctx, *dist, *out, !*noPack)
	if err != nil {
		fmt.Fprintln(os.Stderr, "npmpack:", err)
		os.Exit(1)
	}
	for _, t := range tarballs {
		fmt.Println(t)
	}
}

// artifact is an entry of dist/artifacts.json.
type artifact struct {
	Path   string `json:"path"`
	Type   string `json:"type"`
	Goos   string `json:"goos"`
	Goarch string `json:"goarch"`
}

// platformPkg is one platform's package.
type platformPkg struct {
	name, os, cpu, binary string
}

// run writes the packages of the release in dist into out (emptied
// first) and, when pack is set, packs each there; it returns the
// tarballs' paths (the launcher's first), or the package directories'.
func run(ctx context.Context, dist, out string, pack bool) ([]string, error) {
	var meta struct {
		ProjectName string `json:"project_name"`
		Version     string `json:"version"`
	}
	if err := readJSON(filepath.Join(dist, "metadata.json"), &meta); err != nil {
		return nil, err
	}
	if meta.ProjectName != binaryName {
		return nil, fmt.Errorf("%s/metadata.json is of project %q, not %s", dist, meta.ProjectName, binaryName)
	}
	version, err := npmVersion(meta.Version)
	if err != nil {
		return nil, err
	}
	var artifacts []artifact
	if err := readJSON(filepath.Join(dist, "artifacts.json"), &artifacts); err != nil {
		return nil, err
	}
	if len(artifacts) > maxArtifacts {
		return nil, fmt.Errorf("%s/artifacts.json lists over %d artifacts", dist, maxArtifacts)
	}
	platforms, err := platformsOf(artifacts)
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(out); err != nil {
		return nil, err
	}
	var dirs []string
	dir, err := writeLauncher(out, version, platforms)
	if err != nil {
		return nil, err
	}
	dirs = append(dirs, dir)
	for _, p := range platforms {
		dir, err := writePlatform(out, version, p)
		if err != nil {
			return nil, err
		}
		dirs = append(dirs, dir)
	}
	if !pack {
		return dirs, nil
	}
	npm, err := proc.LookPath("npm")
	if err != nil {
		return nil, fmt.Errorf("npm pack needs npm: %w", err)
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return nil, err
	}
	// npm pack spends its time compressing the binaries: one at a time
	// per CPU.
	tarballs := make([]string, len(dirs))
	errs := make([]error, len(dirs))
	sem := make(chan struct{}, max(1, runtime.NumCPU()))
	var wg sync.WaitGroup
	for i, d := range dirs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			tarballs[i], errs[i] = npmPack(ctx, npm, d, abs)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return tarballs, nil
}

// npmPack runs `npm pack` in dir, leaving the tarball in dest, and
// returns its path.
func npmPack(ctx context.Context, npm, dir, dest string) (string, error) {
	res, err := proc.Run(ctx, proc.Spec{Path: npm, Args: []string{"pack", "--json", "--pack-destination", dest}, Dir: dir,
		Env:     append(os.Environ(), "npm_config_update_notifier=false", "npm_config_fund=false", "npm_config_audit=false"),
		Timeout: 5 * time.Minute, MaxStdout: 1 << 20})
	if err != nil {
		return "", fmt.Errorf("npm pack in %s: %w", dir, err)
	}
	if res.Exit != 0 {
		return "", fmt.Errorf("npm pack in %s: exit %d: %s", dir, res.Exit, res.Stderr)
	}
	var packed []struct {
		Filename string `json:"filename"`
	}
	if err := json.Unmarshal(res.Stdout, &packed); err != nil || len(packed) != 1 || packed[0].Filename == "" {
		return "", fmt.Errorf("npm pack in %s: unexpected answer %q (%v)", dir, res.Stdout, err) //nolint:errorlint // err may be nil
	}
	return filepath.Join(dest, filepath.Base(packed[0].Filename)), nil
}

// semverRE is X.Y.Z with an optional pre-release and build metadata.
var semverRE = regexp.MustCompile(`^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)

// npmVersion is a GoReleaser version (X.Y.Z[-pre][+build], no v) as the
// npm packages carry it: without the build metadata.
func npmVersion(v string) (string, error) {
	if !semverRE.MatchString(v) {
		return "", fmt.Errorf("version %q is not X.Y.Z[-pre][+build]", v)
	}
	v, _, _ = strings.Cut(v, "+")
	return v, nil
}

// platformsOf returns the release's binaries as platform packages,
// sorted by name; a platform npm has no name for, or one twice, is an
// error.
func platformsOf(artifacts []artifact) ([]platformPkg, error) {
	var out []platformPkg
	seen := map[string]bool{}
	for _, a := range artifacts {
		if a.Type != "Binary" {
			continue
		}
		o, c := npmOS[a.Goos], npmCPU[a.Goarch]
		if o == "" || c == "" {
			return nil, fmt.Errorf("artifacts.json: a binary for %s/%s, a platform npm packages are not made for", a.Goos, a.Goarch)
		}
		name := scope + o + "-" + c
		if seen[name] {
			return nil, fmt.Errorf("artifacts.json: two binaries for %s/%s", a.Goos, a.Goarch)
		}
		seen[name] = true
		out = append(out, platformPkg{name: name, os: o, cpu: c, binary: a.Path})
	}
	if len(out) == 0 {
		return nil, errors.New("artifacts.json lists no binary")
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// writeLauncher writes the launcher package, from npm/gemini-mcp-server,
// into out/gemini-mcp-server.
func writeLauncher(out, version string, platforms []platformPkg) (string, error) {
	dir := filepath.Join(out, launcherName)
	pj, err := readTemplate(filepath.Join(templateDir, launcherName, "package.json"))
	if err != nil {
		return "", err
	}
	deps := map[string]string{}
	for _, p := range platforms {
		deps[p.name] = version
	}
	pj["version"], pj["optionalDependencies"] = version, deps
	if err := writePackageJSON(dir, pj); err != nil {
		return "", err
	}
	src := filepath.Join(templateDir, launcherName, "bin", binaryName+".js")
	if err := copyFile(src, filepath.Join(dir, "bin", binaryName+".js"), 0o755, maxMetadataBytes); err != nil {
		return "", err
	}
	for _, f := range launcherFiles {
		if err := copyFile(f, filepath.Join(dir, f), 0o644, maxMetadataBytes); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// writePlatform writes p's package, from npm/platform, into
// out/<os>-<cpu>.
func writePlatform(out, version string, p platformPkg) (string, error) {
	dir := filepath.Join(out, strings.TrimPrefix(p.name, scope))
	pj, err := readTemplate(filepath.Join(templateDir, "platform", "package.json"))
	if err != nil {
		return "", err
	}
	pj["name"], pj["version"], pj["os"], pj["cpu"] = p.name, version, []string{p.os}, []string{p.cpu}
	if err := writePackageJSON(dir, pj); err != nil {
		return "", err
	}
	exe := binaryName
	if p.os == "win32" {
		exe += ".exe"
	}
	if filepath.Base(p.binary) != exe {
		return "", fmt.Errorf("artifacts.json: the binary for %s is %s, not %s", p.name, p.binary, exe)
	}
	if err := copyFile(p.binary, filepath.Join(dir, "bin", exe), 0o755, maxBinaryBytes); err != nil {
		return "", err
	}
	for _, f := range platformFiles {
		if err := copyFile(f, filepath.Join(dir, f), 0o644, maxMetadataBytes); err != nil {
			return "", err
		}
	}
	if err := copyFile(filepath.Join(templateDir, "platform", "README.md"), filepath.Join(dir, "README.md"), 0o644, maxMetadataBytes); err != nil {
		return "", err
	}
	return dir, nil
}

// readTemplate reads a package.json template as an object.
func readTemplate(path string) (map[string]any, error) {
	var pj map[string]any
	if err := readJSON(path, &pj); err != nil {
		return nil, err
	}
	return pj, nil
}

// writePackageJSON writes pj as dir/package.json, indented as npm does
// (its keys sorted; ">=18" as written, not HTML-escaped).
func writePackageJSON(dir string, pj map[string]any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(pj); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "package.json"), b.Bytes(), 0o644)
}

// readJSON decodes a file of at most maxMetadataBytes.
func readJSON(path string, v any) error {
	b, err := readCapped(path, maxMetadataBytes)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// readCapped reads a file of at most max bytes.
func readCapped(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s is over %d bytes", path, max)
	}
	return b, nil
}

// copyFile copies a regular file of at most max bytes, with mode.
func copyFile(src, dst string, mode os.FileMode, max int64) error {
	b, err := readCapped(src, max)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(dst, b, mode); err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}

package docs

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	serverbuild "github.com/gemini-mcp-server/gemini-mcp-server/internal/buildinfo"
)

const (
	releaseConfig = ".goreleaser.yaml"
	binaryName    = "gemini-mcp-server"

	// envReleaseDir names the dist/ directory a `goreleaser release
	// --snapshot` wrote (scripts/test.sh sets it).
	envReleaseDir = "GEMINI_MCP_RELEASE_DIR"
	// envReleaseRequired, set to 1 (scripts/test.sh does), fails
	// TestReleaseArchives rather than skipping it when envReleaseDir is
	// unset; so does $CI.
	envReleaseRequired = "GEMINI_MCP_RELEASE_REQUIRED"

	// Caps on what the test reads of the release directory.
	maxArchiveBytes   = 512 << 20
	maxEntryBytes     = 256 << 20
	maxArchiveEntries = 64
	maxMetadataBytes  = 4 << 20
)

// releaseFiles are the files every release archive holds beside the binary.
var releaseFiles = []string{"LICENSE", "NOTICE", "THIRD_PARTY_NOTICES.md", "THIRD_PARTY_LICENSES.txt", "README.md"}

// yamlList returns the items of every block list under key in a YAML
// text ("key:" on a line of its own, then "- item" lines indented
// deeper), one slice per occurrence of the key.
func yamlList(text, key string) [][]string {
	var lists [][]string
	lines := strings.Split(text, "\n")
	indent := func(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }
	for i, l := range lines {
		if strings.TrimSpace(l) != key+":" {
			continue
		}
		var items []string
		for _, m := range lines[i+1:] {
			s := strings.TrimSpace(m)
			if s == "" || strings.HasPrefix(s, "#") {
				continue
			}
			if indent(m) <= indent(l) || !strings.HasPrefix(s, "- ") {
				break
			}
			items = append(items, strings.Trim(strings.TrimSpace(strings.TrimPrefix(s, "- ")), `"'`))
		}
		lists = append(lists, items)
	}
	return lists
}

// TestReleaseConfig checks that .goreleaser.yaml builds for exactly the
// release platforms THIRD_PARTY_NOTICES.md covers (releasePlatforms), and
// that its archives hold the licence files and the README.
func TestReleaseConfig(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, releaseConfig))
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	targets := yamlList(text, "targets")
	if len(targets) != 1 {
		t.Fatalf("%s has %d targets lists, want the one build's", releaseConfig, len(targets))
	}
	var platforms []string
	for _, tg := range targets[0] {
		goos, goarch, ok := strings.Cut(tg, "_")
		if !ok || strings.Contains(goarch, "_") {
			t.Errorf("%s: target %q is not GOOS_GOARCH", releaseConfig, tg)
			continue
		}
		platforms = append(platforms, goos+"/"+goarch)
	}
	if !sameSet(platforms, releasePlatforms) {
		t.Errorf("%s builds for %v; the release platforms (releasePlatforms in notices_test.go, the platforms %s covers) are %v: change both together",
			releaseConfig, platforms, noticesFile, releasePlatforms)
	}
	files := yamlList(text, "files")
	if len(files) != 1 || !sameSet(files[0], releaseFiles) {
		t.Errorf("%s: the archives' files lists are %v, want one list of %v", releaseConfig, files, releaseFiles)
	}
	for _, v := range []string{serverbuild.VersionVar, serverbuild.CommitVar, serverbuild.DateVar} {
		if !strings.Contains(text, "-X "+v+"=") {
			t.Errorf("%s does not stamp %s (what --version prints) with -ldflags -X", releaseConfig, v)
		}
	}
}

// sameSet reports whether a and b hold the same strings, each once.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b) && len(slices.Compact(a)) == len(b)
}

// releaseArtifact is an entry of GoReleaser's dist/artifacts.json.
type releaseArtifact struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Goos   string `json:"goos"`
	Goarch string `json:"goarch"`
}

// readJSON decodes a file of the release directory of at most
// maxMetadataBytes.
func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b := readCapped(t, path, maxMetadataBytes)
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// readCapped reads a file, failing the test when it is over max bytes.
func readCapped(t *testing.T, path string, max int64) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if int64(len(b)) > max {
		t.Fatalf("%s is over %d bytes", path, max)
	}
	return b
}

// TestReleaseArchives checks the output of `goreleaser release
// --snapshot` in $GEMINI_MCP_RELEASE_DIR: one archive per release
// platform (zip for Windows, tar.gz elsewhere) and no other; each listed
// with its SHA-256 in checksums.txt; each holding exactly the binary,
// the licence files and the README as they are in the repository; each
// binary built for its platform from this module's command, with cgo off
// and -trimpath, static on Linux; and the binary of this machine's
// platform printing the release's version with --version.
func TestReleaseArchives(t *testing.T) {
	dir := os.Getenv(envReleaseDir)
	if dir == "" {
		msg := envReleaseDir + " is not set: it must name the dist/ directory of `goreleaser release --snapshot --clean` (scripts/test.sh runs it)"
		if os.Getenv("CI") != "" || os.Getenv(envReleaseRequired) == "1" {
			t.Fatalf("%s; required because CI or %s=1 is set", msg, envReleaseRequired)
		}
		t.Skip(msg)
	}
	var meta struct {
		ProjectName string `json:"project_name"`
		Version     string `json:"version"`
		Commit      string `json:"commit"`
	}
	readJSON(t, filepath.Join(dir, "metadata.json"), &meta)
	if meta.ProjectName != binaryName || meta.Version == "" {
		t.Fatalf("metadata.json: project %q version %q, want project %q and a version", meta.ProjectName, meta.Version, binaryName)
	}
	version := "v" + meta.Version
	var artifacts []releaseArtifact
	readJSON(t, filepath.Join(dir, "artifacts.json"), &artifacts)

	sums := readChecksums(t, dir)
	wantFiles := map[string][]byte{}
	for _, name := range releaseFiles {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		wantFiles[name] = b
	}
	mainPath := goCmd(t, "list", "-m") + "/cmd/" + binaryName

	var platforms, names []string
	ran := false
	for _, a := range artifacts {
		if a.Type != "Archive" {
			continue
		}
		platform := a.Goos + "/" + a.Goarch
		platforms = append(platforms, platform)
		names = append(names, a.Name)
		t.Run(platform, func(t *testing.T) {
			ext, exe := ".tar.gz", binaryName
			if a.Goos == "windows" {
				ext, exe = ".zip", binaryName+".exe"
			}
			if !strings.HasSuffix(a.Name, ext) || !strings.Contains(a.Name, meta.Version) {
				t.Errorf("archive %s: want a %s named with the version %s", a.Name, ext, meta.Version)
			}
			path := filepath.Join(dir, a.Name)
			data := readCapped(t, path, maxArchiveBytes)
			sum := sha256.Sum256(data)
			if got, ok := sums[a.Name]; !ok {
				t.Errorf("checksums.txt has no line for %s", a.Name)
			} else if got != hex.EncodeToString(sum[:]) {
				t.Errorf("checksums.txt: %s has SHA-256 %s, the file %x", a.Name, got, sum)
			}
			entries := readArchive(t, a.Name, data)
			var got []string
			for n := range entries {
				got = append(got, n)
			}
			if want := append([]string{exe}, releaseFiles...); !sameSet(got, want) {
				t.Errorf("%s holds %v, want exactly %v", a.Name, got, want)
			}
			for name, want := range wantFiles {
				if e, ok := entries[name]; ok && !bytes.Equal(e.data, want) {
					t.Errorf("%s: %s differs from the repository's", a.Name, name)
				}
			}
			bin, ok := entries[exe]
			if !ok {
				return
			}
			if a.Goos != "windows" && bin.mode&0o111 == 0 {
				t.Errorf("%s: %s is not executable (mode %v)", a.Name, exe, bin.mode)
			}
			checkBinary(t, bin.data, a.Goos, a.Goarch, mainPath, version)
			if a.Goos == runtime.GOOS && a.Goarch == runtime.GOARCH {
				ran = true
				runVersion(t, bin.data, exe, wantBuild(t, bin.data, version, meta.Commit))
			}
		})
	}
	if !sameSet(platforms, releasePlatforms) {
		t.Errorf("artifacts.json lists archives for %v, want one for each of %v", platforms, releasePlatforms)
	}
	onDisk, err := filepath.Glob(filepath.Join(dir, "*.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zips, _ := filepath.Glob(filepath.Join(dir, "*.zip"))
	for i, p := range append(onDisk, zips...) {
		if i >= maxArchiveEntries {
			t.Fatalf("over %d archives in %s", maxArchiveEntries, dir)
		}
		if n := filepath.Base(p); !slices.Contains(names, n) {
			t.Errorf("%s is in %s but not in artifacts.json", n, dir)
		}
	}
	for n := range sums {
		if !slices.Contains(names, n) {
			t.Errorf("checksums.txt names %s, which is not an archive of the release", n)
		}
	}
	if !ran && slices.Contains(releasePlatforms, runtime.GOOS+"/"+runtime.GOARCH) {
		t.Errorf("no archive for this machine's platform %s/%s: no binary's --version was run", runtime.GOOS, runtime.GOARCH)
	}
}

// readChecksums reads dist/checksums.txt: "<sha256>  <file name>" lines.
func readChecksums(t *testing.T, dir string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(readCapped(t, filepath.Join(dir, "checksums.txt"), maxMetadataBytes)))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if b, err := hex.DecodeString(sum); !ok || err != nil || len(b) != sha256.Size || name == "" {
			t.Fatalf("checksums.txt: bad line %q", sc.Text())
		}
		if _, dup := sums[name]; dup {
			t.Fatalf("checksums.txt names %s twice", name)
		}
		sums[name] = sum
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sums
}

// archiveEntry is a regular file of an archive.
type archiveEntry struct {
	data []byte
	mode os.FileMode
}

// readArchive returns the regular files of a tar.gz or zip archive by
// name, failing the test on anything else (directories, links, a name
// twice, too many or too large entries).
func readArchive(t *testing.T, name string, data []byte) map[string]archiveEntry {
	t.Helper()
	entries := map[string]archiveEntry{}
	add := func(n string, mode os.FileMode, r io.Reader) {
		if len(entries) >= maxArchiveEntries {
			t.Fatalf("%s has over %d entries", name, maxArchiveEntries)
		}
		if !mode.IsRegular() {
			t.Fatalf("%s: %s is not a regular file (%v)", name, n, mode)
		}
		if _, dup := entries[n]; dup {
			t.Fatalf("%s holds %s twice", name, n)
		}
		b, err := io.ReadAll(io.LimitReader(r, maxEntryBytes+1))
		if err != nil {
			t.Fatalf("%s: %s: %v", name, n, err)
		}
		if len(b) > maxEntryBytes {
			t.Fatalf("%s: %s is over %d bytes", name, n, maxEntryBytes)
		}
		entries[n] = archiveEntry{data: b, mode: mode}
	}
	if strings.HasSuffix(name, ".zip") {
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, f := range zr.File {
			r, err := f.Open()
			if err != nil {
				t.Fatalf("%s: %s: %v", name, f.Name, err)
			}
			add(f.Name, f.Mode(), r)
			r.Close()
		}
		return entries
	}
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		add(h.Name, h.FileInfo().Mode(), tr)
	}
	return entries
}

// checkBinary checks what Go recorded in a release binary: the platform,
// the main package, cgo off, -trimpath; that it holds the version;
// and, for Linux, that it is static (no interpreter, no shared library).
func checkBinary(t *testing.T, bin []byte, goos, goarch, mainPath, version string) {
	t.Helper()
	bi, err := buildinfo.Read(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("build information: %v", err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	want := map[string]string{"GOOS": goos, "GOARCH": goarch, "CGO_ENABLED": "0", "-trimpath": "true"}
	for k, v := range want {
		if settings[k] != v {
			t.Errorf("built with %s=%q, want %q", k, settings[k], v)
		}
	}
	if bi.Path != mainPath {
		t.Errorf("main package %s, want %s", bi.Path, mainPath)
	}
	// Go leaves -ldflags out of the build information of a -trimpath
	// build; the string -X stamped is in the binary's data.
	if !bytes.Contains(bin, []byte(version)) {
		t.Errorf("the binary does not hold the version %s (internal/buildinfo stamped with -ldflags -X)", version)
	}
	if goos != "linux" {
		return
	}
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("ELF: %v", err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("the binary names a dynamic loader (PT_INTERP): it is not static")
		}
	}
	if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
		t.Errorf("the binary needs shared libraries %v (%v): it is not static", libs, err)
	}
}

// wantBuild is what a release binary's --version must print after its
// name: the release's version; the commit GoReleaser found (metadata.json)
// and that commit's date as git gives it; without one ("none": a checkout
// without a git remote), the revision and time Go recorded, else unknown.
func wantBuild(t *testing.T, bin []byte, version, commit string) serverbuild.Info {
	t.Helper()
	want := serverbuild.Info{Version: version, Commit: serverbuild.Unknown, Date: serverbuild.Unknown}
	if commit != "" && commit != "none" {
		out, err := exec.Command("git", "-C", root, "show", "-s", "--format=%cI", commit).Output()
		if err != nil {
			t.Fatalf("git show %s: %v", commit, err)
		}
		date, err := time.Parse(time.RFC3339, strings.TrimSpace(string(out)))
		if err != nil {
			t.Fatalf("git show %s: %v", commit, err)
		}
		want.Commit, want.Date = commit, date.UTC().Format(time.RFC3339)
		return want
	}
	bi, err := buildinfo.Read(bytes.NewReader(bin))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			want.Commit = s.Value
		case "vcs.time":
			want.Date = s.Value
		}
	}
	return want
}

// runVersion runs a release binary with --version in a temporary
// directory and checks that it prints want: the version, the commit and
// its date.
func runVersion(t *testing.T, bin []byte, exe string, want serverbuild.Info) {
	t.Helper()
	tmp := t.TempDir()
	path := filepath.Join(tmp, exe)
	if err := os.WriteFile(path, bin, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), path, "--version")
	cmd.Dir = tmp
	cmd.Env = []string{"HOME=" + tmp}
	cmd.WaitDelay = 5 * time.Second
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s", exe, err, stderr.String())
	}
	if want := fmt.Sprintf("%s %s\n", binaryName, want); string(out) != want {
		t.Errorf("%s --version printed %q, want %q", exe, out, want)
	}
}

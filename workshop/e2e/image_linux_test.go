package e2e

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/x509"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

const (
	// envImage names the image archive scripts/image.sh wrote (a
	// docker-archive: `podman load` or `docker load` reads it); test.sh
	// sets it.
	envImage = "GEMINI_MCP_IMAGE"
	// envImageRequired, set to 1 (test.sh does), fails the image tests
	// rather than skipping them when envImage is unset or the machine
	// cannot run the image; so does $CI.
	envImageRequired = "GEMINI_MCP_IMAGE_REQUIRED"

	// imageUser is the user the image runs as (distroless's "nonroot").
	imageUser = "65532:65532"
	imageUID  = 65532

	// Caps on what the tests read of the archive.
	maxImageArchive = 512 << 20
	maxImageEntries = 4096
)

// imageRequired says whether the image tests must run here.
func imageRequired() bool {
	return os.Getenv("CI") != "" || os.Getenv(envImageRequired) == "1"
}

// imageArchive returns $GEMINI_MCP_IMAGE, skipping the test without it
// (failing it where the image is required).
func imageArchive(t *testing.T) string {
	t.Helper()
	p := os.Getenv(envImage)
	if p == "" {
		msg := envImage + " is not set: it names the image archive scripts/image.sh builds from a snapshot release's dist/"
		if imageRequired() {
			t.Fatalf("%s; required because CI or %s=1 is set", msg, envImageRequired)
		}
		t.Skip(msg)
	}
	return p
}

// imageConfig is the part of a docker image configuration the tests read.
type imageConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		User         string              `json:"User"`
		ExposedPorts map[string]struct{} `json:"ExposedPorts"`
		Env          []string            `json:"Env"`
		Entrypoint   []string            `json:"Entrypoint"`
		Cmd          []string            `json:"Cmd"`
		Volumes      map[string]struct{} `json:"Volumes"`
		WorkingDir   string              `json:"WorkingDir"`
		Labels       map[string]string   `json:"Labels"`
		Healthcheck  *struct {
			Test     []string `json:"Test"`
			Interval int64    `json:"Interval"`
			Timeout  int64    `json:"Timeout"`
			Retries  int      `json:"Retries"`
		} `json:"Healthcheck"`
	} `json:"config"`
}

// imageFile is an entry of the image's file system.
type imageFile struct {
	typeflag byte
	mode     int64
	uid, gid int
	data     []byte
}

// image is an image archive, read.
type image struct {
	tag    string // name:tag
	config imageConfig
	files  map[string]imageFile // by absolute path
}

// readImage reads a docker-archive: its manifest, its configuration, and
// its layers applied in order.
func readImage(t *testing.T, archive string) *image {
	t.Helper()
	f, err := os.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries := map[string][]byte{}
	tr := tar.NewReader(io.LimitReader(f, maxImageArchive))
	for n := 0; ; n++ {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", archive, err)
		}
		if n >= maxImageEntries {
			t.Fatalf("%s has more than %d entries", archive, maxImageEntries)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("%s: %s: %v", archive, h.Name, err)
		}
		entries[path.Clean(h.Name)] = b
	}
	var manifest []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	if err := json.Unmarshal(entries["manifest.json"], &manifest); err != nil || len(manifest) != 1 || len(manifest[0].RepoTags) != 1 {
		t.Fatalf("%s: manifest.json names not one image with one tag (%v): %s", archive, err, entries["manifest.json"])
	}
	img := &image{tag: manifest[0].RepoTags[0], files: map[string]imageFile{}}
	if err := json.Unmarshal(entries[path.Clean(manifest[0].Config)], &img.config); err != nil {
		t.Fatalf("%s: the image configuration %s: %v", archive, manifest[0].Config, err)
	}
	for _, name := range manifest[0].Layers {
		layer, ok := entries[path.Clean(name)]
		if !ok {
			t.Fatalf("%s: layer %s is missing", archive, name)
		}
		var r io.Reader = bytes.NewReader(layer)
		if bytes.HasPrefix(layer, []byte{0x1f, 0x8b}) {
			if r, err = gzip.NewReader(r); err != nil {
				t.Fatalf("%s: layer %s: %v", archive, name, err)
			}
		}
		lr := tar.NewReader(io.LimitReader(r, maxImageArchive))
		for n := 0; ; n++ {
			h, err := lr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: layer %s: %v", archive, name, err)
			}
			if n >= maxImageEntries {
				t.Fatalf("%s: layer %s has more than %d entries", archive, name, maxImageEntries)
			}
			p := path.Clean("/" + h.Name)
			if dir, base := path.Split(p); strings.HasPrefix(base, ".wh.") {
				delete(img.files, path.Join(dir, strings.TrimPrefix(base, ".wh.")))
				continue
			}
			file := imageFile{typeflag: h.Typeflag, mode: h.Mode, uid: h.Uid, gid: h.Gid}
			if h.Typeflag == tar.TypeReg {
				if file.data, err = io.ReadAll(lr); err != nil {
					t.Fatalf("%s: layer %s: %s: %v", archive, name, h.Name, err)
				}
			}
			img.files[p] = file
		}
	}
	return img
}

// ociPackage is server.json's entry of the image.
type ociPackage struct {
	RegistryType string
	Identifier   string
	Transport    struct{ Type, URL string }
	// RuntimeArguments are the engine's arguments (docker run …).
	RuntimeArguments []struct{ Name, Value string }
}

// registryEntry is what server.json says of the server and the image.
func registryEntry(t *testing.T) (name, repository string, oci ociPackage) {
	t.Helper()
	b, err := os.ReadFile("../../server.json")
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Name       string
		Repository struct{ URL string }
		Packages   []ociPackage
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	for _, p := range s.Packages {
		if p.RegistryType == "oci" {
			oci = p
		}
	}
	if oci.Identifier == "" {
		t.Fatal("server.json names no oci package")
	}
	return s.Name, s.Repository.URL, oci
}

// imageFiles are the regular files the image holds, and nothing else
// besides their directories and the empty ones of imageDirs: no shell, no
// package manager, no other program.
var imageFiles = []string{
	"/gemini-mcp-server",
	"/etc/ssl/certs/ca-certificates.crt",
	"/licenses/LICENSE",
	"/licenses/NOTICE",
	"/licenses/THIRD_PARTY_NOTICES.md",
	"/licenses/THIRD_PARTY_LICENSES.txt",
}

var imageDirs = []string{"/data", "/workspace", "/tmp"}

// TestImageContents reads the image archive scripts/image.sh built and
// checks what it holds and how it runs: the static binary alone with the
// CA bundle and the licence files (no shell), user 65532, the /data volume
// owned by it, port 8080, the health check by the binary itself, and the
// labels, which agree with server.json and the binary's version.
func TestImageContents(t *testing.T) {
	img := readImage(t, imageArchive(t))
	cfg := img.config.Config

	regName, repoURL, oci := registryEntry(t)
	name, tag, _ := strings.Cut(img.tag, ":")
	if regRepo, _, _ := strings.Cut(oci.Identifier, ":"); name != regRepo {
		t.Errorf("the image is named %s; server.json names %s", name, oci.Identifier)
	}
	// server.json's client reaches the image's port published on
	// loopback, at /mcp.
	if oci.Transport.Type != "streamable-http" || oci.Transport.URL != "http://127.0.0.1:8080/mcp" {
		t.Errorf("server.json's image transport %+v: the image serves Streamable HTTP at /mcp on port 8080", oci.Transport)
	}
	published := false
	for _, a := range oci.RuntimeArguments {
		published = published || (a.Name == "--publish" && a.Value == "127.0.0.1:8080:8080")
	}
	if !published {
		t.Errorf("server.json's image arguments %+v do not publish port 8080 on 127.0.0.1:8080", oci.RuntimeArguments)
	}
	labels := cfg.Labels
	for k, want := range map[string]string{
		"io.modelcontextprotocol.server.name": regName,
		"org.opencontainers.image.source":     repoURL,
		"org.opencontainers.image.title":      "gemini-mcp-server",
		"org.opencontainers.image.licenses":   "Apache-2.0",
	} {
		if labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, labels[k], want)
		}
	}
	if lic, err := os.ReadFile("../../LICENSE"); err != nil || !bytes.HasPrefix(bytes.TrimSpace(lic), []byte("Apache License")) {
		t.Errorf("the licenses label says Apache-2.0; LICENSE begins otherwise (%v)", err)
	}
	version := labels["org.opencontainers.image.version"]
	if version == "" || strings.ReplaceAll(version, "+", "-") != tag {
		t.Errorf("label version %q, tag %q: the tag is the version, + made -", version, tag)
	}

	if cfg.User != imageUser {
		t.Errorf("user %q, want %s", cfg.User, imageUser)
	}
	if !slices.Equal(cfg.Entrypoint, []string{"/gemini-mcp-server"}) || len(cfg.Cmd) != 0 {
		t.Errorf("entrypoint %q, cmd %q: want the binary alone, its settings in the environment", cfg.Entrypoint, cfg.Cmd)
	}
	for _, kv := range []string{"GEMINI_MCP_HTTP=0.0.0.0:8080", "GEMINI_MCP_STATE_DIR=/data"} {
		if !slices.Contains(cfg.Env, kv) {
			t.Errorf("environment %q lacks %s", cfg.Env, kv)
		}
	}
	for _, kv := range cfg.Env {
		if k, _, _ := strings.Cut(kv, "="); k == "GEMINI_API_KEY" || k == "GEMINI_MCP_TOKENS" || k == "GEMINI_MCP_ALLOW_INSECURE_REMOTE" {
			t.Errorf("the image sets %s: credentials and the insecure switch are the user's to give", k)
		}
	}
	if _, ok := cfg.ExposedPorts["8080/tcp"]; !ok || len(cfg.ExposedPorts) != 1 {
		t.Errorf("exposed ports %v, want 8080/tcp", cfg.ExposedPorts)
	}
	if _, ok := cfg.Volumes["/data"]; !ok || len(cfg.Volumes) != 1 {
		t.Errorf("volumes %v, want /data", cfg.Volumes)
	}
	if cfg.WorkingDir != "/workspace" {
		t.Errorf("working directory %q, want /workspace", cfg.WorkingDir)
	}
	if hc := cfg.Healthcheck; hc == nil || len(hc.Test) < 3 || hc.Test[0] != "CMD" || hc.Test[1] != "/gemini-mcp-server" || hc.Test[2] != "healthcheck" ||
		hc.Interval <= 0 || hc.Timeout <= 0 || hc.Retries <= 0 {
		t.Errorf("health check %+v: want the binary's healthcheck subcommand, exec form (no shell), with an interval, timeout and retries", hc)
	}

	// The file system: these files, their directories, the empty
	// directories, and nothing else.
	allowedDirs := map[string]bool{"/": true}
	for _, p := range append(slices.Clone(imageFiles), imageDirs...) {
		for d := path.Dir(p); d != "/"; d = path.Dir(d) {
			allowedDirs[d] = true
		}
	}
	for _, d := range imageDirs {
		allowedDirs[d] = true
	}
	for p, f := range img.files {
		switch {
		case f.typeflag == tar.TypeDir && allowedDirs[p]:
		case f.typeflag == tar.TypeReg && slices.Contains(imageFiles, p):
		default:
			t.Errorf("the image holds %s (type %q), which it should not: only the binary, the CA bundle and the licences", p, f.typeflag)
		}
	}
	for _, p := range imageFiles {
		if _, ok := img.files[p]; !ok {
			t.Errorf("the image lacks %s", p)
		}
	}
	for _, sh := range []string{"/bin/sh", "/bin/bash", "/bin/busybox", "/usr/bin/curl"} {
		if _, ok := img.files[sh]; ok {
			t.Errorf("the image has %s", sh)
		}
	}
	for _, d := range imageDirs {
		if f, ok := img.files[d]; !ok || f.typeflag != tar.TypeDir {
			t.Errorf("the image lacks the directory %s", d)
		}
	}
	if f := img.files["/data"]; f.uid != imageUID || f.gid != imageUID || f.mode&0o700 != 0o700 {
		t.Errorf("/data is owned by %d:%d, mode %o: the server's user (%s) must write there", f.uid, f.gid, f.mode, imageUser)
	}
	if f := img.files["/tmp"]; f.mode&0o1777 != 0o1777 {
		t.Errorf("/tmp has mode %o, want 1777", f.mode)
	}

	bin := img.files["/gemini-mcp-server"]
	if bin.mode&0o111 == 0 {
		t.Errorf("/gemini-mcp-server has mode %o: not executable", bin.mode)
	}
	if ef, err := elf.NewFile(bytes.NewReader(bin.data)); err != nil {
		t.Errorf("/gemini-mcp-server is not an ELF executable: %v", err)
	} else {
		want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[img.config.Architecture]
		if ef.Machine != want || img.config.OS != "linux" {
			t.Errorf("the binary is for %v; the image says %s/%s", ef.Machine, img.config.OS, img.config.Architecture)
		}
		for _, p := range ef.Progs {
			if p.Type == elf.PT_INTERP {
				t.Error("the binary is dynamically linked: a scratch image has no C library")
			}
		}
	}
	if !bytes.Contains(bin.data, []byte("v"+version)) {
		t.Errorf("the binary does not carry the version v%s of the label", version)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(img.files["/etc/ssl/certs/ca-certificates.crt"].data) || bytes.Count(img.files["/etc/ssl/certs/ca-certificates.crt"].data, []byte("BEGIN CERTIFICATE")) < 10 {
		t.Error("/etc/ssl/certs/ca-certificates.crt is not a CA bundle: TLS to the Gemini API would fail")
	}
	for _, p := range imageFiles {
		if !strings.HasPrefix(p, "/licenses/") {
			continue
		}
		want, err := os.ReadFile(filepath.Join("..", "..", path.Base(p)))
		if err != nil || !bytes.Equal(img.files[p].data, want) {
			t.Errorf("%s differs from the repository's %s (%v)", p, path.Base(p), err)
		}
	}
}

// podman runs podman with a storage, configuration and temporary directory
// of a test's own, as root with runc, cgroupfs, file events and lowered
// ulimits (what runs containers on a machine without systemd or cgroup v2
// delegation), and slirp4netns networking: ports published on 127.0.0.1
// without iptables, and the host's loopback reachable from the container
// as 10.0.2.2.
type podman struct {
	env []string
	ref string // the image loaded
}

// hostLoopback is the host's 127.0.0.1 as a container sees it.
const hostLoopback = "10.0.2.2"

// notRunnable skips the test, or fails it where the image is required,
// saying why the image cannot run here.
func notRunnable(t *testing.T, why string) {
	t.Helper()
	msg := "the image cannot run on this machine: " + why
	if imageRequired() {
		t.Fatalf("%s (required because CI or %s=1 is set)", msg, envImageRequired)
	}
	t.Skip(msg)
}

// newPodman sets podman up for the test, loads the image archive, and
// runs it once (--version) to see that containers run here. Everything
// goes at the end of the test: containers, volumes, images, the storage.
func newPodman(t *testing.T, archive string) *podman {
	t.Helper()
	for _, tool := range []string{"podman", "runc", "slirp4netns"} {
		if _, err := exec.LookPath(tool); err != nil {
			notRunnable(t, tool+" is not installed (Debian: apt-get install podman runc slirp4netns)")
		}
	}
	if os.Geteuid() != 0 {
		notRunnable(t, "these tests run podman as root (a rootless podman needs subordinate ids and user namespaces)")
	}
	// Short paths: podman's sockets live under them.
	dir, err := os.MkdirTemp("", "gmcp-podman-")
	if err != nil {
		t.Fatal(err)
	}
	const varlib = "/var/lib/containers"
	_, statErr := os.Stat(varlib)
	hadVarlib := statErr == nil
	storage := fmt.Sprintf("[storage]\ndriver = \"vfs\"\ngraphroot = %q\nrunroot = %q\n", dir+"/root", dir+"/runroot")
	conf := fmt.Sprintf(`[containers]
default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]
netns = "slirp4netns"

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = %q
tmp_dir = %q
volume_path = %q
network_cmd_options = ["allow_host_loopback=true", "port_handler=slirp4netns"]

[network]
network_config_dir = %q
`, dir+"/events.log", dir+"/libpod", dir+"/volumes", dir+"/net")
	for name, body := range map[string]string{"storage.conf": storage, "containers.conf": conf} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o700); err != nil {
		t.Fatal(err)
	}
	p := &podman{env: append(os.Environ(),
		"CONTAINERS_STORAGE_CONF="+filepath.Join(dir, "storage.conf"),
		"CONTAINERS_CONF="+filepath.Join(dir, "containers.conf"),
		"TMPDIR="+filepath.Join(dir, "tmp"))}
	t.Cleanup(func() {
		// Every container stops (SIGTERM: the server drains, 5 s of
		// --drain-delay with no call in flight; SIGKILL only past 30 s,
		// the longest drain), then goes with its volumes and the images.
		for _, args := range [][]string{
			{"rm", "--all", "--force", "--time", "30"},
			{"volume", "rm", "--all", "--force"},
			{"rmi", "--all", "--force"},
		} {
			if out, code := p.run(t, args...); code != 0 {
				t.Errorf("podman %s: exit %d\n%s", strings.Join(args, " "), code, out)
			}
		}
		if out, _ := p.run(t, "ps", "--all", "--quiet"); strings.TrimSpace(out) != "" {
			t.Errorf("containers left: %s", out)
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing podman's storage: %v", err)
		}
		if !hadVarlib {
			// As root, podman keeps a cache of blob digests there,
			// whatever its storage.
			os.RemoveAll(varlib)
		}
	})
	out, code := p.run(t, "load", "--quiet", "--input", archive)
	m := regexp.MustCompile(`Loaded image(?:\(s\))?: (\S+)`).FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("podman load %s: exit %d\n%s", archive, code, out)
	}
	p.ref = m[1]
	if out, code := p.run(t, "run", "--rm", "--network", "none", p.ref, "--version"); code != 0 || !strings.Contains(out, "gemini-mcp-server v") {
		notRunnable(t, fmt.Sprintf("podman run (runc, cgroupfs) failed: exit %d\n%s", code, out))
	}
	return p
}

// run runs podman args, within 3 minutes, and returns its output (stdout
// and stderr) and exit code.
func (p *podman) run(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "podman", args...)
	cmd.Env, cmd.WaitDelay = p.env, 5*time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("podman %s: still running after 3 minutes\n%s", strings.Join(args, " "), out.String())
	}
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("podman: %v", err)
	}
	return out.String(), cmd.ProcessState.ExitCode()
}

var servingRE = regexp.MustCompile(`msg="serving MCP over HTTP" addr=(\S+)`)

// waitServing follows the container's log until the server says it
// listens, and returns the log so far; it fails the test if the container
// stops first.
func (p *podman) waitServing(t *testing.T, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "podman", "logs", "--follow", name)
	cmd.Env, cmd.WaitDelay = p.env, 5*time.Second
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var log strings.Builder
	sc := bufio.NewScanner(r)
	found := false
	for !found && sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		found = servingRE.MatchString(sc.Text())
	}
	cancel()
	r.Close()
	cmd.Wait()
	if !found {
		state, _ := p.run(t, "inspect", "--format", "{{.State.Status}} exit {{.State.ExitCode}}", name)
		t.Fatalf("container %s never said it serves (%s):\n%s", name, strings.TrimSpace(state), log.String())
	}
	return log.String()
}

// freePort is a loopback port free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// httpc is the tests' plain HTTP client: no request outlives a minute.
var httpc = &http.Client{Timeout: time.Minute}

// bearer is an http.RoundTripper that sends a bearer token.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSession connects the go-sdk's Streamable HTTP client to url with a
// bearer token.
func mcpSession(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "image-test", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer(token)}}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestImageRuns runs the image with podman as a user would: port 8080
// published on a loopback port, a named volume on /data, a bearer token
// and an API key, the Gemini API being the fake one on the host's
// loopback. A go-sdk client lists the tools and chats through it, the
// health check passes, a session outlives the container (a new one on
// the same volume continues it), doctor runs as the image's subcommand,
// and without a token the server refuses to start on the container's open
// address.
func TestImageRuns(t *testing.T) {
	archive := imageArchive(t)
	img := readImage(t, archive)
	p := newPodman(t, archive)

	fake := fakeapi.New()
	t.Cleanup(fake.Close)
	const key, token = "image-test-key", "image-test-token-0123456789"
	fake.RequireKey(key)
	_, fakePort, _ := net.SplitHostPort(strings.TrimPrefix(fake.URL(), "http://"))
	start := func(name string) (base string) {
		port := freePort(t)
		if out, code := p.run(t, "run", "--detach", "--name", name, "--publish", "127.0.0.1:"+port+":8080", "--volume", "gmcp-data:/data",
			"--env", "GEMINI_API_KEY="+key, "--env", "GOOGLE_GEMINI_BASE_URL=http://"+hostLoopback+":"+fakePort,
			"--env", "GEMINI_MCP_TOKENS="+token, p.ref); code != 0 {
			t.Fatalf("podman run: exit %d\n%s", code, out)
		}
		log := p.waitServing(t, name)
		// The image has no Gemini CLI: auto chooses the API backend.
		if !strings.Contains(log, `backend=api why="auto: no Gemini CLI was found`) || !strings.Contains(log, "auth=true") {
			t.Errorf("the container's server did not choose the API backend with authentication:\n%s", log)
		}
		return "http://127.0.0.1:" + port
	}

	base := start("gmcp-1")
	resp, err := httpc.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	wantVersion := `"version":"v` + img.config.Config.Labels["org.opencontainers.image.version"] + `"`
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"status":"ok"`) || !strings.Contains(string(body), wantVersion) {
		t.Fatalf("/healthz: %s %s (want %s)", resp.Status, body, wantVersion)
	}
	// MCP needs the token.
	resp, err = httpc.Post(base+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/mcp without a token: %s, want 401", resp.Status)
	}

	cs := mcpSession(t, base+"/mcp", token)
	// No call outlives two minutes.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, want := range []string{"chat", "chat-reply", "chat-page", "sessions", "codereview"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools/list through the container: %v lacks %s", names, want)
		}
	}
	const prompt = "hello from inside the container"
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": prompt}})
	if err != nil || res.IsError || len(res.Content) == 0 {
		t.Fatalf("chat: %v %+v", err, res)
	}
	answer := res.Content[0].(*mcp.TextContent).Text
	if !strings.Contains(answer, "fake-api answer: ") || !strings.Contains(answer, "contents=1") || !strings.Contains(answer, "last="+prompt) {
		t.Fatalf("chat answered %q, not the fake API's answer", answer)
	}
	sessionID, _ := res.Meta["sessionId"].(string)
	if sessionID == "" {
		t.Fatalf("chat returned no sessionId: %+v", res.Meta)
	}
	cs.Close()

	// The image's own health check, as the engine runs it.
	if out, code := p.run(t, "healthcheck", "run", "gmcp-1"); code != 0 {
		t.Errorf("podman healthcheck run: exit %d\n%s", code, out)
	}
	if out, _ := p.run(t, "inspect", "--format", "{{.State.Health.Status}}", "gmcp-1"); strings.TrimSpace(out) != "healthy" {
		t.Errorf("health status %q, want healthy", out)
	}
	// The session store is on the volume, written by the image's user.
	mount, code := p.run(t, "volume", "inspect", "--format", "{{.Mountpoint}}", "gmcp-data")
	if code != 0 {
		t.Fatalf("podman volume inspect: %s", mount)
	}
	if uid, err := fileOwner(filepath.Join(strings.TrimSpace(mount), "sessions.db")); err != nil || uid != imageUID {
		t.Errorf("/data/sessions.db: owner %d, %v; want the image's user %d", uid, err, imageUID)
	}

	// A new container on the same volume continues the session.
	if out, code := p.run(t, "rm", "--force", "--time", "30", "gmcp-1"); code != 0 {
		t.Fatalf("podman rm: exit %d\n%s", code, out)
	}
	base = start("gmcp-2")
	cs = mcpSession(t, base+"/mcp", token)
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat-reply", Arguments: map[string]any{"sessionId": sessionID, "prompt": "and after a restart"}})
	if err != nil || res.IsError || len(res.Content) == 0 {
		t.Fatalf("chat-reply after the restart: %v %+v", err, res)
	}
	if answer := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(answer, "contents=3") || !strings.Contains(answer, "last=and after a restart") {
		t.Fatalf("chat-reply after the restart answered %q: the first turn was not sent again from the volume's store", answer)
	}
	cs.Close()

	// A word after the image's name is a subcommand: doctor checks the
	// container's setup, the API reached with the key and the store on
	// /data (an anonymous volume here) writable.
	out, code := p.run(t, "run", "--rm", "--env", "GEMINI_API_KEY="+key, "--env", "GOOGLE_GEMINI_BASE_URL=http://"+hostLoopback+":"+fakePort, p.ref, "doctor")
	if code != 0 || !strings.Contains(out, "backend: api") || !strings.Contains(out, "the Gemini API accepts the credentials") || !strings.Contains(out, "session store: sqlite:/data/sessions.db") {
		t.Errorf("doctor in the image: exit %d\n%s", code, out)
	}

	// Without a token the server will not listen on the container's open
	// address.
	out, code = p.run(t, "run", "--rm", "--network", "none", "--env", "GEMINI_API_KEY="+key, p.ref)
	if code != 1 || !strings.Contains(out, "without authentication") {
		t.Fatalf("the image without GEMINI_MCP_TOKENS: exit %d, want 1 refusing to listen\n%s", code, out)
	}
}

// TestReadmeContainer runs the README's container example as written
// ("docker" being podman here, under the name docker; the published port
// moved to a free one): the token made, the container started, Claude
// Code registered with `claude mcp add --transport http` and the token
// header, and `claude mcp list` connecting to it through the container.
func TestReadmeContainer(t *testing.T) {
	archive := imageArchive(t)
	claude := otherCLI(t, "claude")
	p := newPodman(t, archive)
	blocks := codeBlocks(readmeSection(t, "Run it in a container (after the first release)"), "sh")
	if len(blocks) != 1 {
		t.Fatalf("want one sh block in the README's container section, found %d", len(blocks))
	}
	script := blocks[0]
	run := regexp.MustCompile(`(?m)^docker run .*$`).FindString(script)
	image := strings.Fields(run)
	if run == "" || !strings.Contains(run, "-p 127.0.0.1:8080:8080") || !strings.Contains(script, "claude mcp add --transport http") {
		t.Fatalf("the README's container example no longer has a `docker run ... -p 127.0.0.1:8080:8080 ...` line and a `claude mcp add --transport http` line:\n%s", script)
	}
	_, _, oci := registryEntry(t)
	regRepo, _, _ := strings.Cut(oci.Identifier, ":")
	if ref := image[len(image)-1]; ref != regRepo && !strings.HasPrefix(ref, regRepo+":") {
		t.Fatalf("the README runs the image %s; server.json names %s", ref, oci.Identifier)
	} else if out, code := p.run(t, "tag", p.ref, ref); code != 0 {
		t.Fatalf("podman tag: %s", out)
	}
	name := regexp.MustCompile(`--name (\S+)`).FindStringSubmatch(run)
	if name == nil {
		t.Fatalf("the README's docker run line names no container (--name): %s", run)
	}

	port := freePort(t)
	script = strings.ReplaceAll(script, "127.0.0.1:8080", "127.0.0.1:"+port)
	bin := t.TempDir()
	shim := "#!/bin/sh\nexec podman \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	env := append(slices.Clone(p.env), "PATH="+bin+string(os.PathListSeparator)+filepath.Dir(claude)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"HOME="+home, "GEMINI_API_KEY=readme-container-key",
		"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "NO_COLOR=1")
	c := &cliHome{home: home, work: t.TempDir(), env: env}
	// The whole block, in one shell: the token it makes is the one the
	// container and the registration get.
	if stdout, stderr, code := c.sh(t, "set -e\n"+script); code != 0 {
		t.Fatalf("the README's container example: exit %d\n%s%s", code, stdout, stderr)
	}
	p.waitServing(t, name[1])
	stdout, stderr, code := c.exec(t, claude, "mcp", "list")
	if code != 0 || !regexp.MustCompile(`(?m)^gemini: http://127\.0\.0\.1:`+port+`/mcp \(HTTP\) - ✔ Connected$`).MatchString(stdout) {
		t.Fatalf("claude mcp list: exit %d\n%s%s", code, stdout, stderr)
	}
	// The connection took the token: without it the server refuses.
	resp, err := httpc.Post("http://127.0.0.1:"+port+"/mcp", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/mcp without the token: %s, want 401", resp.Status)
	}
}

// fileOwner is the uid that owns path.
func fileOwner(path string) (int, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return -1, err
	}
	return int(fi.Sys().(*syscall.Stat_t).Uid), nil
}

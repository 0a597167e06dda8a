// Package deploy_test runs the deployment files of this directory: three
// --stateless replicas of the server on one real redis-server, each with a
// fake Gemini API of its own (so that the requests a fake receives are the
// turns its replica ran), behind a real HAProxy running haproxy.cfg and a
// real nginx running nginx.conf, driven by several go-sdk clients through
// the balancer; and replicas with MCP sessions behind HAProxy with a stick
// table. compose.yaml describes the same topology in containers; the
// suite checks it and runs the topology without them.
package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// composeFile is the part of a Compose file these tests read.
type composeFile struct {
	Name     string
	Services map[string]struct {
		Image       string
		Build       any
		Command     []string
		Environment map[string]string
		Volumes     []string
		Ports       []string
		DependsOn   any    `yaml:"depends_on"`
		StopSignal  string `yaml:"stop_signal"`
	}
	Volumes map[string]any
}

// TestCompose checks compose.yaml, which the suite cannot run (no
// container engine with Compose on CI): it parses, has three replicas of
// the project's image on one Redis behind HAProxy, and HAProxy runs the
// very haproxy.cfg that TestHAProxy runs, with every variable it uses set
// to a replica's listening address.
func TestCompose(t *testing.T) {
	data, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(false)
	if err := dec.Decode(&c); err != nil {
		t.Fatalf("compose.yaml does not parse: %v", err)
	}
	for _, name := range []string{"redis", "replica1", "replica2", "replica3", "haproxy"} {
		if _, ok := c.Services[name]; !ok {
			t.Fatalf("compose.yaml has no service %q (it has %v)", name, keys(c.Services))
		}
	}

	replicaAddr := map[string]string{}
	for _, name := range []string{"replica1", "replica2", "replica3"} {
		s := c.Services[name]
		if !strings.Contains(s.Image, "gemini-mcp-server") && s.Build == nil {
			t.Errorf("%s: neither the project's image nor a build: %q", name, s.Image)
		}
		flag := func(f string) string {
			i := slices.Index(s.Command, f)
			if i < 0 || i+1 >= len(s.Command) {
				return ""
			}
			return s.Command[i+1]
		}
		if !slices.Contains(s.Command, "--stateless") {
			t.Errorf("%s: not --stateless, so the round robin of haproxy.cfg would break its sessions: %q", name, s.Command)
		}
		if got := flag("--store"); !strings.HasPrefix(got, "redis://redis:") {
			t.Errorf("%s: --store %q, want the redis service", name, got)
		}
		addr := flag("--http")
		_, port, ok := strings.Cut(addr, ":")
		if !ok || port == "" {
			t.Errorf("%s: --http %q names no port", name, addr)
		}
		replicaAddr[name] = name + ":" + port
		if s.Environment["GEMINI_MCP_TOKENS"] == "" {
			t.Errorf("%s: no GEMINI_MCP_TOKENS: a replica off loopback refuses to start without tokens", name)
		}
	}

	h := c.Services["haproxy"]
	var cfg string
	for _, v := range h.Volumes {
		src, dst, _ := strings.Cut(v, ":")
		if strings.HasSuffix(strings.TrimSuffix(dst, ":ro"), "haproxy.cfg") {
			cfg = src
		}
	}
	abs, err := filepath.Abs(cfg)
	if err != nil || cfg == "" {
		t.Fatalf("the haproxy service mounts no haproxy.cfg: %q", h.Volumes)
	}
	if want, _ := filepath.Abs("haproxy.cfg"); abs != want {
		t.Errorf("the haproxy service mounts %s, not the haproxy.cfg the suite runs (%s)", abs, want)
	}
	conf, err := os.ReadFile("haproxy.cfg")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, line := range strings.Split(string(conf), "\n") {
		code, _, _ := strings.Cut(line, "#")
		for _, m := range regexp.MustCompile(`\$\{(\w+)\}`).FindAllStringSubmatch(code, -1) {
			used[m[1]] = true
		}
	}
	for v := range used {
		if h.Environment[v] == "" {
			t.Errorf("haproxy.cfg uses ${%s}, which the haproxy service does not set", v)
		}
	}
	for n, name := range []string{"replica1", "replica2", "replica3"} {
		v := "REPLICA" + string(rune('1'+n))
		if !used[v] {
			t.Errorf("haproxy.cfg does not use ${%s}", v)
		}
		if got := h.Environment[v]; got != replicaAddr[name] {
			t.Errorf("haproxy: %s=%q, want %s's address %q", v, got, name, replicaAddr[name])
		}
	}
	_, lbPort, _ := strings.Cut(h.Environment["LB_LISTEN"], ":")
	if !slices.ContainsFunc(h.Ports, func(p string) bool { return strings.HasSuffix(p, ":"+lbPort) }) {
		t.Errorf("haproxy: LB_LISTEN %q is not published (ports %q)", h.Environment["LB_LISTEN"], h.Ports)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

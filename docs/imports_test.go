package docs

import (
	"strings"
	"testing"
)

// TestToolLayersAreSiblings checks the layering architecture.md
// describes: the chat tools (internal/tools) and the expert tools
// (internal/expert) share the conversation pipeline (internal/conversation),
// the error vocabulary (internal/toolerr) and the rendering of what every
// result carries (internal/render), and never import each other; the
// pipeline and the shared packages import neither.
func TestToolLayersAreSiblings(t *testing.T) {
	mod := goCmd(t, "list", "-m")
	deps := func(pkg string) []string {
		return strings.Fields(goCmd(t, "list", "-deps", "./"+pkg))
	}
	imports := func(from, to string) bool {
		for _, d := range deps(from) {
			if d == mod+"/"+to {
				return true
			}
		}
		return false
	}
	for _, c := range []struct{ from, to string }{
		{"internal/tools", "internal/expert"},
		{"internal/expert", "internal/tools"},
		{"internal/conversation", "internal/tools"},
		{"internal/conversation", "internal/expert"},
		{"internal/toolerr", "internal/tools"},
		{"internal/toolerr", "internal/expert"},
		{"internal/render", "internal/tools"},
		{"internal/render", "internal/expert"},
	} {
		if imports(c.from, c.to) {
			t.Errorf("%s imports %s (directly or not): the two must stay apart", c.from, c.to)
		}
	}
	for _, pkg := range []string{"internal/tools", "internal/expert"} {
		if !imports(pkg, "internal/conversation") {
			t.Errorf("%s does not use internal/conversation, the turn pipeline every tool shares", pkg)
		}
	}
}

// TestCLIBackendsAreSiblings checks the backends' layering
// architecture.md describes: the one-shot backend (internal/backend/cli)
// and the warm one (internal/backend/acp) share what they know of the
// Gemini CLI through internal/backend/geminicli and never import each
// other; the warm one's fallback reaches it as a backend.Backend.
func TestCLIBackendsAreSiblings(t *testing.T) {
	mod := goCmd(t, "list", "-m")
	imports := func(from, to string) bool {
		for _, d := range strings.Fields(goCmd(t, "list", "-deps", "./"+from)) {
			if d == mod+"/"+to {
				return true
			}
		}
		return false
	}
	for _, c := range []struct{ from, to string }{
		{"internal/backend/acp", "internal/backend/cli"},
		{"internal/backend/cli", "internal/backend/acp"},
		{"internal/backend/geminicli", "internal/backend/cli"},
		{"internal/backend/geminicli", "internal/backend/acp"},
	} {
		if imports(c.from, c.to) {
			t.Errorf("%s imports %s (directly or not): the two must stay apart", c.from, c.to)
		}
	}
	for _, pkg := range []string{"internal/backend/cli", "internal/backend/acp"} {
		if !imports(pkg, "internal/backend/geminicli") {
			t.Errorf("%s does not use internal/backend/geminicli, what both CLI backends share of the CLI", pkg)
		}
	}
}

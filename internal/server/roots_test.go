package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAllowedRootsOverMCP checks the allowed roots through a client: a cwd
// outside them, however spelt, never reaches the CLI, and the error says
// which directories are allowed and how to allow more.
func TestAllowedRootsOverMCP(t *testing.T) {
	t.Parallel()
	h := newHarness(t, options{allowedRoots: []string{"home"}})
	sub := filepath.Join(h.home, "project")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	outside := realDir(t, t.TempDir())
	if err := os.Symlink(outside, filepath.Join(h.home, "link")); err != nil {
		t.Fatal(err)
	}
	for _, args := range []map[string]any{
		{"prompt": "x", "cwd": "/etc"},
		{"prompt": "x", "cwd": "~"},
		{"prompt": "x", "cwd": "../../.."},
		{"prompt": "x", "cwd": "link"},
		{"prompt": "x", "cwd": "/proc/self/cwd"},
	} {
		for _, tool := range []string{"chat", "chat-reply"} {
			text, _, isErr := h.call(tool, args)
			if !isErr || !strings.Contains(text, "outside the directories this server allows: "+h.home) || !strings.Contains(text, "--allowed-roots") {
				t.Errorf("%s in %v: %q", tool, args["cwd"], text)
			}
		}
	}
	if inv := h.invocations(); len(inv) != 0 {
		t.Fatalf("%d calls outside the roots reached the CLI: %+v", len(inv), inv)
	}
	text, id, isErr := h.call("chat", map[string]any{"prompt": "inside", "cwd": "project"})
	if isErr {
		t.Fatal(text)
	}
	if inv := h.invocations(); len(inv) != 1 || inv[0].Cwd != sub {
		t.Fatalf("invocations %+v", inv)
	}
	if text, _, isErr := h.call("chat-reply", map[string]any{"prompt": "again", "sessionId": id}); isErr {
		t.Fatal(text)
	}

	// A session recorded outside the roots (before they were set) cannot
	// be continued once they are, with or without its id.
	h.opts.allowedRoots = nil
	h.connect()
	_, old, isErr := h.call("chat", map[string]any{"prompt": "outside", "cwd": outside})
	if isErr {
		t.Fatal("chat without roots failed")
	}
	h.opts.allowedRoots = []string{"home"}
	h.connect()
	before := len(h.invocations())
	for _, args := range []map[string]any{{"prompt": "x", "sessionId": old}, {"prompt": "x"}} {
		if text, _, isErr := h.call("chat-reply", args); !isErr || !strings.Contains(text, "--allowed-roots") {
			t.Errorf("chat-reply %v to a session outside the roots: %q", args, text)
		}
	}
	if n := len(h.invocations()); n != before {
		t.Fatalf("%d calls outside the roots reached the CLI", n-before)
	}
}

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The tests of this file give the MCP host a configuration that starts
// this server again, as the README registers it with a client: the
// server must not start itself without end.

// TestHostRefusesItself: a configuration (from GEMINI_MCP_CONFIG, which a
// child would inherit) whose stdio server is this executable, reached
// through a symbolic link, with the README's env, stops the start with an
// error that says why; no copy of the server is started.
func TestHostRefusesItself(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("symbolic links")
	}
	dir := t.TempDir()
	link := filepath.Join(dir, "gemini-mcp-server")
	if err := os.Symlink(serverBin, link); err != nil {
		t.Fatal(err)
	}
	h := newHostEnv(t, map[string]any{
		"gemini": map[string]any{"command": link, "args": []string{"--backend", "api"}, "env": map[string]string{"GEMINI_API_KEY": "$GEMINI_API_KEY"}},
	})
	for _, args := range [][]string{{"--backend", "api"}, {"mcp", "list"}} {
		cmd := exec.Command(serverBin, args...)
		cmd.Env = append(h.vars, "GEMINI_MCP_CONFIG="+h.config)
		var stdout, stderr bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(""), &stdout, &stderr
		err := cmd.Run()
		if err == nil || !strings.Contains(stderr.String(), "mcpServers.gemini.command") || !strings.Contains(stderr.String(), "this gemini-mcp-server itself") {
			t.Errorf("%q: %v, stdout %q\nstderr:\n%s", args, err, stdout.String(), stderr.String())
		}
		if strings.Contains(stderr.String(), "MCP server connected") {
			t.Errorf("%q started a copy of itself:\n%s", args, stderr.String())
		}
	}
}

// TestHostSelfChainBounded: a copy of this server started through a
// wrapper the configuration check cannot see through, each copy with
// --allow-nested and the same configuration, stops at the second copy:
// the host's children carry the nested mark with their depth, and a copy
// two levels down serves no tools, whatever --allow-nested says.
func TestHostSelfChainBounded(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("a shell script wrapper")
	}
	dir := t.TempDir()
	pids := filepath.Join(dir, "pids")
	if err := os.Mkdir(pids, 0o700); err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "wrapper.sh")
	// The wrapper stops a runaway chain at six copies, so that the test
	// fails rather than filling the machine.
	script := "#!/bin/sh\nn=$(ls " + pids + " | wc -l)\nif [ \"$n\" -ge 6 ]; then exit 7; fi\ntouch " + pids + "/pid-$$\nexec " + serverBin + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	h := newHostEnv(t, nil)
	cfg := filepath.Join(dir, "self.json")
	data := `{"mcpServers": {"self": {"command": "` + wrapper + `", "args": ["--backend", "api", "--allow-nested", "--mcp-config", "` + cfg + `", "--log-level", "debug"],
		"env": {"GEMINI_API_KEY": "$GEMINI_API_KEY"}, "trust": true, "timeout": 20000}}}`
	if err := os.WriteFile(cfg, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	h.config = cfg
	cs := h.stdio(t, nil, "")
	// The root's connection to the first copy, and (in the first copy's
	// stderr, which the root logs) the first copy's to the second.
	h.stderr.wait(t, 1, `msg="MCP server connected"`, "mcp_server=self ")
	h.stderr.wait(t, 1, `msg="MCP server stderr"`, "MCP server connected", "mcp_server=self")
	// The second copy serves no tools.
	h.stderr.wait(t, 1, `msg="MCP server stderr"`, "serving no tools")
	if tools, err := cs.ListTools(context.Background(), nil); err != nil || len(tools.Tools) == 0 {
		t.Errorf("the root serves no tools: %v", err)
	}
	entries, err := os.ReadDir(pids)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("%d copies of the server were started, want 2", len(entries))
	}
}

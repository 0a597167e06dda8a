package mcphost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// TestCrossCheckRealCLI gives the real Gemini CLI 0.61.0 and this host the
// same mcpServers and compares what they make of them: the servers `gemini
// mcp list` finds connected, and the function names the CLI declares to
// the (fake) Gemini API against the host's. The configuration has names
// to sanitize (spaces, dots, 65 characters, two long names cut alike), a
// tool on two servers, two servers whose names clash (a / b_c and a_b /
// c), include and exclude lists, all three transports, the SSE fallback
// of a url without a type, and a server that cannot start.
func TestCrossCheckRealCLI(t *testing.T) {
	gemini := fakeapi.RealCLI(t)
	api := fakeapi.New()
	t.Cleanup(api.Close)

	long := "a_tool_name_of_sixty_five_characters_" + strings.Repeat("x", 28)
	cut1 := strings.Repeat("x", 30) + "one" + strings.Repeat("y", 30)
	cut2 := strings.Repeat("x", 30) + "two" + strings.Repeat("y", 30)
	sse := startRemote(t, "sse", "-tool", "ping")
	streamable := startRemote(t, "http", "-tool", "ping")
	args := func(a ...string) []any {
		out := []any{"-self-timeout", "2m"}
		for _, s := range a {
			out = append(out, s)
		}
		return out
	}
	servers := map[string]any{
		"down one":  map[string]any{"command": mcpdown, "args": args("-tool", "echo", "-tool", "tool.with.dots", "-tool", long, "-tool", "say hi", "-tool", "hidden"), "excludeTools": []string{"hidden"}},
		"two":       map[string]any{"command": mcpdown, "args": args("-tool", "echo", "-tool", "only", "-tool", "other"), "includeTools": []string{"only(text)"}},
		"a":         map[string]any{"command": mcpdown, "args": args("-tool", "b_c")},
		"a_b":       map[string]any{"command": mcpdown, "args": args("-tool", "c")},
		"cut":       map[string]any{"command": mcpdown, "args": args("-tool", cut1, "-tool", cut2)},
		"sse.srv":   map[string]any{"url": sse, "type": "sse"},
		"streaming": map[string]any{"httpUrl": streamable},
		"fallback":  map[string]any{"url": sse},
		"gone":      map[string]any{"command": filepath.Join(t.TempDir(), "no-such-server")},
	}
	for _, s := range servers {
		// Headless, the CLI declares only tools it may run without asking.
		s.(map[string]any)["trust"] = true
	}

	home, work := t.TempDir(), t.TempDir()
	env := append([]string{"PATH=" + os.Getenv("PATH"), "TMPDIR=" + t.TempDir(), "GEMINI_CLI_NO_RELAUNCH=true"}, api.Home(t, home)...)
	var settings map[string]any
	if err := json.Unmarshal([]byte(fakeapi.Settings), &settings); err != nil {
		t.Fatal(err)
	}
	settings["mcpServers"] = servers
	data, err := json.Marshal(settings)
	if err != nil {
		t.Fatal(err)
	}
	settingsPath := filepath.Join(home, ".gemini", "settings.json")
	if err := os.WriteFile(settingsPath, data, 0o644); err != nil {
		t.Fatal(err)
	}

	// This host, on the CLI's own settings file.
	cfg, err := LoadConfig(settingsPath, os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	h, _ := startHost(t, cfg.Servers...)
	if err := h.WaitSettled(geminitest.Context(t)); err != nil {
		t.Fatal(err)
	}
	ours := map[string]State{}
	for _, s := range h.Status() {
		ours[s.Name] = s.State
	}

	// The CLI's mcp list.
	out, errOut := runGemini(t, gemini, env, work, "mcp", "list")
	line := regexp.MustCompile(`(?m)^\S+ (.+?): .* \((stdio|http|sse)\) - (\w+)$`)
	theirs := map[string]string{}
	for _, m := range line.FindAllStringSubmatch(out+errOut, -1) {
		theirs[m[1]] = m[3]
	}
	if len(theirs) != len(servers) {
		t.Fatalf("gemini mcp list showed %d servers, want %d:\n%s\n%s", len(theirs), len(servers), out, errOut)
	}
	for name, state := range theirs {
		want := StateFailed
		if state == "Connected" {
			want = StateConnected
		}
		if name == "fallback" && state == "Disconnected" {
			// `gemini mcp list` probes with Streamable HTTP only: its
			// connection test lacks the SSE fallback that its sessions use
			// (the prompt below declares mcp_fallback_ping). The host's list
			// shows the state its sessions have.
			want = StateConnected
		}
		if ours[name] != want {
			t.Errorf("server %q: the CLI says %s, the host %s", name, state, ours[name])
		}
	}

	// The names the CLI declares to the API. In yolo mode, since headless
	// it otherwise declares only the tools its policy lets run unasked,
	// and its policy parses "mcp_down_one_echo" as server "down" (it
	// splits at the first "_"), so that the tools of "down one" would be
	// left out even with trust: a policy matter, not a naming one.
	out, errOut = runGemini(t, gemini, env, work, "-m", "gemini-fake", "-o", "json", "--approval-mode", "yolo", "--prompt=list your tools")
	var cliNames []string
	for _, r := range api.Requests() {
		if r.Method != fakeapi.MethodStream {
			continue
		}
		for _, n := range r.Tools {
			if strings.HasPrefix(n, "mcp_") && !slices.Contains(cliNames, n) {
				cliNames = append(cliNames, n)
			}
		}
	}
	ourNames := declared(h)
	slices.Sort(cliNames)
	slices.Sort(ourNames)
	if !slices.Equal(cliNames, ourNames) {
		t.Errorf("declared names differ\nCLI:  %q\nours: %q\nCLI output: %s\n%s", cliNames, ourNames, out, errOut)
	}
	for _, want := range []string{"mcp_down_one_say_hi", "mcp_down_one_tool.with.dots", ToolName("down one", long), "mcp_a_b_c", "mcp_sse.srv_ping", "mcp_fallback_ping", "mcp_two_only"} {
		if !slices.Contains(ourNames, want) {
			t.Errorf("%s is not declared: %q", want, ourNames)
		}
	}
}

func runGemini(t *testing.T, gemini string, env []string, dir string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gemini, args...)
	cmd.Env, cmd.Dir = env, dir
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		t.Fatalf("gemini %v: %v", args, err)
	}
	if err != nil {
		t.Fatalf("gemini %v: %v\n%s\n%s", args, err, so.String(), se.String())
	}
	return so.String(), se.String()
}

package app

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/mcptest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/server"
)

var update = flag.Bool("update", false, "rewrite the tool and prompt snapshots in testdata/toolsnaps and testdata/promptsnaps")

// listed are the tools and prompts of the server app builds, by default
// flags, as a client lists them.
func listed(t *testing.T) (*mcp.ListToolsResult, *mcp.ListPromptsResult, *mcp.InitializeResult) {
	t.Helper()
	return listedWith(t)
}

// listedWith is listed with more flags.
func listedWith(t *testing.T, args ...string) (*mcp.ListToolsResult, *mcp.ListPromptsResult, *mcp.InitializeResult) {
	t.Helper()
	cfg, err := config.Parse("test", "", append([]string{"--cwd", t.TempDir(), "--state-dir", t.TempDir(), "--backend", "oneshot", "--store", "memory:"}, args...),
		func(string) string { return "" }, io.Discard, configRules())
	if err != nil {
		t.Fatal(err)
	}
	deps, err := NewDeps(context.Background(), cfg, IO{Getenv: func(string) string { return "" }}.env(), slog.New(slog.DiscardHandler), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		deps.Backend.Close()
		deps.Store.Close()
	})
	srv, err := newServer("test", cfg, deps, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	cs := mcptest.Connect(t, srv, nil)
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	prompts := &mcp.ListPromptsResult{}
	if cs.InitializeResult().Capabilities.Prompts != nil {
		if prompts, err = cs.ListPrompts(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
	}
	return tools, prompts, cs.InitializeResult()
}

// TestSnapshots compares every tool and every prompt the server lists,
// as decoded JSON, with its snapshot in testdata; a tool or prompt
// without a snapshot fails, and so does a snapshot of none. -update
// rewrites the snapshots.
func TestSnapshots(t *testing.T) {
	t.Parallel()
	tools, prompts, _ := listed(t)
	byDir := map[string]map[string]any{"toolsnaps": {}, "promptsnaps": {}}
	for _, tool := range tools.Tools {
		byDir["toolsnaps"][tool.Name] = tool
	}
	for _, p := range prompts.Prompts {
		byDir["promptsnaps"][p.Name] = p
	}
	for dir, items := range byDir {
		dir = filepath.Join("testdata", dir)
		if *update {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		for name, item := range items {
			got, err := json.MarshalIndent(item, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, name+".json")
			if *update {
				if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Errorf("no snapshot of %s (run go test ./internal/app -run Snapshots -update): %v", name, err)
				continue
			}
			if !sameJSON(t, got, want) {
				t.Errorf("%s differs from %s (rerun with -update if intended):\n%s", name, path, got)
			}
		}
		files, err := filepath.Glob(filepath.Join(dir, "*"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if _, ok := items[strings.TrimSuffix(filepath.Base(f), ".json")]; !ok || filepath.Ext(f) != ".json" {
				t.Errorf("%s is the snapshot of nothing the server lists: remove it (or rerun with -update)", f)
			}
		}
	}
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Errorf("the snapshot is not JSON: %v", err)
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// TestRegistryIsWhatTheServerOffers: the server lists the registry's
// tools and prompts, no other; --rate-limits may name each of them; the
// instructions name each expert tool.
func TestRegistryIsWhatTheServerOffers(t *testing.T) {
	t.Parallel()
	tools, prompts, init := listed(t)
	var names, promptNames, wantPrompts []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	for _, p := range prompts.Prompts {
		promptNames = append(promptNames, p.Name)
	}
	for _, tool := range server.Tools {
		if tool.Prompt {
			wantPrompts = append(wantPrompts, tool.Name)
		}
	}
	sorted := func(s []string) []string { return slices.Sorted(slices.Values(s)) }
	if got, want := sorted(names), sorted(server.ToolNames()); !slices.Equal(got, want) {
		t.Errorf("the server offers %q, its registry lists %q", got, want)
	}
	if got, want := sorted(promptNames), sorted(wantPrompts); !slices.Equal(got, want) {
		t.Errorf("the server's prompts are %q, its registry's %q", got, want)
	}
	if got := configRules().RateLimitTools; !slices.Equal(sorted(got), sorted(names)) {
		t.Errorf("--rate-limits takes %q, the server offers %q", got, names)
	}
	// The flag as Run parses it takes each tool offered, and no other.
	for _, name := range append(names, "no-such-tool") {
		_, err := config.Parse("test", "", []string{"--rate-limits", name + "=1/min"}, func(string) string { return "" }, io.Discard, configRules())
		if offered := slices.Contains(names, name); offered != (err == nil) {
			t.Errorf("--rate-limits %s=1/min: offered %v, parse error %v", name, offered, err)
		}
	}
	for _, name := range server.RPCErrorTools() {
		if !strings.Contains(init.Instructions, name) {
			t.Errorf("the instructions do not name %s: %s", name, init.Instructions)
		}
	}
}

// TestToolsPassGeminiCLIRules checks what the Gemini CLI, as an MCP
// client, requires of tool names and schemas: names of at most 63
// characters from [a-zA-Z0-9_.-], and no schema keyword its sanitizer
// strips.
func TestToolsPassGeminiCLIRules(t *testing.T) {
	t.Parallel()
	tools, _, _ := listed(t)
	nameRE := regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,63}$`)
	for _, tool := range tools.Tools {
		if !nameRE.MatchString(tool.Name) {
			t.Errorf("tool name %q", tool.Name)
		}
		raw, _ := json.Marshal(tool.InputSchema)
		for _, banned := range []string{"additionalProperties", "$schema", "anyOf", "oneOf", "allOf", "$ref", `"null"`} {
			if strings.Contains(string(raw), banned) {
				t.Errorf("%s schema has %s: %s", tool.Name, banned, raw)
			}
		}
		if tool.Description == "" {
			t.Errorf("%s has no description", tool.Name)
		}
	}
}

// TestHelpNamesToolArguments: each tool --help lists takes exactly the
// arguments the help names (in any order), as the server lists it.
func TestHelpNamesToolArguments(t *testing.T) {
	t.Parallel()
	tools, _, _ := listed(t)
	schemas := map[string][]string{}
	for _, tool := range tools.Tools {
		var sc struct {
			Properties map[string]any `json:"properties"`
		}
		raw, _ := json.Marshal(tool.InputSchema)
		if err := json.Unmarshal(raw, &sc); err != nil {
			t.Fatal(err)
		}
		for name := range sc.Properties {
			schemas[tool.Name] = append(schemas[tool.Name], name)
		}
	}
	_, section, _ := strings.Cut(usageHeader, "Tools {arguments}:")
	section, _, _ = strings.Cut(section, "--backend")
	found := 0
	for _, m := range regexp.MustCompile(`(?:^|\s)([a-z][a-z-]*) \{([^}]*)\}`).FindAllStringSubmatch(section, -1) {
		found++
		want, ok := schemas[m[1]]
		if !ok {
			t.Errorf("--help lists %s, which the server does not offer", m[1])
			continue
		}
		var got []string
		for _, a := range strings.Split(m[2], ",") {
			got = append(got, strings.TrimSpace(a))
		}
		if g, w := slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want)); !slices.Equal(g, w) {
			t.Errorf("--help says %s takes %v, its schema %v", m[1], g, w)
		}
	}
	if found == 0 {
		t.Fatalf("no tool found in the help:\n%s", section)
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// target is one MCP server under test and how to call its chat tool.
type target struct {
	Name    string // in the tables
	Ours    bool
	Backend string // ours: the --backend it runs with
	Version string
	Path    string // the executable: our binary, or node
	Args    []string
	Env     []string // on top of the sandbox's environment
	Tool    string
	Notes   string // how it runs the CLI, from its source
	// ToolArgs builds the tool's arguments; model "" leaves the server's
	// (or the CLI's) default.
	ToolArgs func(prompt, model string) map[string]any
}

// Our server's backends, as --backend names them.
const (
	backendOneshot = "oneshot"
	backendWarm    = "warm"
	backendAPI     = "api"
)

// backendNotes say how each backend runs the CLI.
var backendNotes = map[string]string{
	backendOneshot: "tool `chat {prompt, model, systemPrompt, cwd}`; runs `gemini [-m MODEL] --session-id UUID --output-format json` per call " +
		"in a process group of its own (the prompt on stdin, never in argv; `GEMINI_CLI_NO_RELAUNCH=true`), parses the JSON, records the session on disk; " +
		"at most `--max-concurrent` CLIs at once (default 4)",
	backendWarm: "the same tool; keeps up to `--warm-processes` (default 2) long-lived `gemini --acp` processes and sends each prompt over " +
		"the Agent Client Protocol (`session/new`, then `session/prompt`) on their stdin, so a call pays no process start; calls the pool cannot serve run one-shot",
	backendAPI: "the same tool; runs no CLI: sends the conversation to the Gemini API (`streamGenerateContent`) through the genai SDK, " +
		"checks the model against the API's model list (fetched once, cached for 10 minutes) and records the turn in the session store",
}

// ours is gemini-mcp-server itself with extra flags. backend is the one
// it runs with ("" for a build without --backend, which is one-shot);
// name is how the tables call it.
func ours(bin, version, name, backend string, extra ...string) *target {
	notes := backendNotes[backend]
	if backend == "" {
		notes = backendNotes[backendOneshot]
	}
	return &target{
		Name:    name,
		Ours:    true,
		Backend: backend,
		Version: version,
		Path:    bin,
		Args:    append([]string{}, extra...),
		Tool:    "chat",
		Notes:   notes,
		ToolArgs: func(prompt, model string) map[string]any {
			a := map[string]any{"prompt": prompt}
			if model != "" {
				a["model"] = model
			}
			return a
		},
	}
}

// noopName is the no-op go-sdk server's name in the tables.
const noopName = "no-op go-sdk server"

// noopTarget is bench/noopserver built at bin: a go-sdk MCP server over
// stdio whose chat tool echoes the prompt, the limit our server's cold
// start and memory are measured against.
func noopTarget(bin string) *target {
	return &target{
		Name:     noopName,
		Version:  "go-sdk (this module's)",
		Path:     bin,
		Tool:     "chat",
		Notes:    "tool `chat {prompt, model}`; echoes the prompt, runs nothing",
		ToolArgs: promptModelArgs,
	}
}

// oneshot reports whether t runs the CLI once per call, as the peers do.
func (t *target) oneshot() bool { return t.Ours && (t.Backend == "" || t.Backend == backendOneshot) }

// peerSpec is one of the other MCP servers that wrap the Gemini CLI, as
// read from its source in node_modules (npm versions pinned in
// bench/peers/package-lock.json). Notes say how it runs the CLI: that is
// what decides whether a comparison is fair.
type peerSpec struct {
	Package string
	Env     []string
	Tool    string
	Notes   string
}

var peerSpecs = []peerSpec{
	{
		Package: "gemini-mcp-tool",
		// Since 2026-06-18 it defaults to the Antigravity CLI (agy); this
		// selects the Gemini CLI backend.
		Env:  []string{"GEMINI_MCP_BACKEND=gemini"},
		Tool: "ask-gemini",
		Notes: "tool `ask-gemini {prompt, model}`; runs `gemini [-m MODEL] -p PROMPT` (plain-text output, stdin ignored; " +
			"prompts containing `@` go on stdin instead), returns stdout prefixed `Gemini response:`; no concurrency limit, no sessions",
	},
	{
		Package: "ask-gemini-mcp",
		// It otherwise runs `$SHELL -ilc 'echo $PATH'` once and uses the
		// login shell's PATH for the CLI, which would drop the fake's
		// directory from PATH. ASK_LLM_PATH is its documented override.
		Env:  []string{"ASK_LLM_PATH=$PATH"},
		Tool: "ask-gemini",
		Notes: "tool `ask-gemini {prompt, model, sessionId}`; runs `gemini -m MODEL --output-format stream-json -p PROMPT` " +
			"(MODEL defaults to gemini-3.1-pro-preview; stdin a pipe, closed at once; prompts over 16 KiB on stdin with `-p \"\"`) and parses the JSONL events; " +
			"sets GEMINI_CLI_TRUST_WORKSPACE=true for it; caches answers by (prompt, model) in memory, so the bench makes every prompt unique; " +
			"runs `$SHELL -ilc` once to learn a login shell's PATH unless `ASK_LLM_PATH` is set, which the bench sets to the PATH it gives every server",
	},
	{
		Package: "@choplin/mcp-gemini-cli",
		Tool:    "geminiChat",
		Notes: "tool `geminiChat {prompt, model, sandbox, yolo}`; runs `which gemini` at start-up and again before every call, " +
			"then `gemini -p PROMPT [-m MODEL]` (plain-text output, stdin a pipe closed at once) and returns stdout",
	},
}

// promptModelArgs is the {prompt, model} argument shape all three peers use.
func promptModelArgs(prompt, model string) map[string]any {
	a := map[string]any{"prompt": prompt}
	if model != "" {
		a["model"] = model
	}
	return a
}

// peerTarget builds the target for spec from its installed package under
// nodeModules, running its bin script with node directly so that the pid
// the bench reads memory from is the Node process itself.
func peerTarget(node, nodeModules string, spec peerSpec) (*target, error) {
	dir := filepath.Join(nodeModules, filepath.FromSlash(spec.Package))
	data, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return nil, fmt.Errorf("peer %s is not installed: %w", spec.Package, err)
	}
	var pkg struct {
		Version string          `json:"version"`
		Bin     json.RawMessage `json:"bin"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		return nil, fmt.Errorf("peer %s: package.json: %w", spec.Package, err)
	}
	script, err := binScript(pkg.Bin)
	if err != nil {
		return nil, fmt.Errorf("peer %s: %w", spec.Package, err)
	}
	return &target{
		Name:     spec.Package,
		Version:  pkg.Version,
		Path:     node,
		Args:     []string{filepath.Join(dir, filepath.FromSlash(script))},
		Env:      spec.Env,
		Tool:     spec.Tool,
		Notes:    spec.Notes,
		ToolArgs: promptModelArgs,
	}, nil
}

// binScript reads package.json's "bin": a path, or a map with one entry.
func binScript(raw json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil && s != "" {
		return s, nil
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil || len(m) == 0 {
		return "", fmt.Errorf("package.json has no usable bin entry")
	}
	for _, v := range m {
		if len(m) == 1 {
			return v, nil
		}
	}
	return "", fmt.Errorf("package.json has %d bin entries; expected one", len(m))
}

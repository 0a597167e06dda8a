// Package geminicli is what the two Gemini CLI backends share of the CLI:
// how to find and start it (Command, Resolve), the operator's flags and
// the child's environment (Options, ChildEnv, SystemPromptFile), the JSON
// object it reports with (Output), and how its exit codes and messages
// become typed errors that say what to do (Classify and the error
// constructors). The one-shot backend (package cli) and the warm one
// (package acp) both build on it; neither imports the other.
package geminicli

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/proc"
)

// Options is the operator's configuration of every CLI call, one-shot or
// warm. None of it is reachable from tool arguments.
type Options struct {
	Gemini string // executable name or path; "" means "gemini" in PATH
	Env    []string
	// DefaultModel is passed as -m when a call names no model, sparing the
	// CLI's model router its extra API round trip; "" leaves the choice to
	// the CLI.
	DefaultModel string

	ApprovalMode          string // "" leaves the CLI's headless default
	Sandbox               bool
	SkipTrust             bool
	IncludeDirectories    []string
	Extensions            []string
	AllowedMCPServerNames []string

	Timeout        time.Duration // per call; 0 means none
	KillGrace      time.Duration // from interrupt to kill; 0 means backend.DefaultKillGrace
	MaxOutputBytes int           // stdout cap; 0 means config.DefaultMaxOutputBytes
}

// WithDefaults is o with KillGrace and MaxOutputBytes at their defaults
// where unset.
func (o Options) WithDefaults() Options {
	if o.KillGrace <= 0 {
		o.KillGrace = backend.DefaultKillGrace
	}
	if o.MaxOutputBytes <= 0 {
		o.MaxOutputBytes = config.DefaultMaxOutputBytes
	}
	return o
}

// OperatorArgs are the operator's flags, passed to every CLI process, the
// warm ones included.
func (o Options) OperatorArgs() []string {
	var a []string
	if o.ApprovalMode != "" {
		a = append(a, "--approval-mode="+o.ApprovalMode)
	}
	if o.Sandbox {
		a = append(a, "--sandbox")
	}
	if o.SkipTrust {
		a = append(a, "--skip-trust")
	}
	for _, d := range o.IncludeDirectories {
		a = append(a, "--include-directories="+d)
	}
	for _, e := range o.Extensions {
		a = append(a, "--extensions="+e)
	}
	for _, n := range o.AllowedMCPServerNames {
		a = append(a, "--allowed-mcp-server-names="+n)
	}
	return a
}

// ChildEnv is the CLI's environment: the server's own less its GEMINI_MCP_* settings, the configured
// additions (extra), and GEMINI_CLI_NO_RELAUNCH=true unless either sets it. Without
// it the CLI re-spawns itself at every start, only to raise Node's heap
// limit to half the machine's memory (and, in interactive use, to restart
// after a settings change): a second Node start-up, about 1 s per call,
// and a grandchild that ignores SIGINT. A one-shot headless call fits the
// default heap.
func ChildEnv(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		// This server's own settings are of no use to the CLI, and some
		// are secrets (GEMINI_MCP_TOKENS, GEMINI_MCP_AUTH_CLIENT_SECRET,
		// a store URL with a password) that the model's shell tools
		// could read there.
		if !strings.HasPrefix(strings.ToUpper(kv), "GEMINI_MCP_") {
			env = append(env, kv)
		}
	}
	env = append(env, extra...)
	for _, kv := range env {
		if strings.HasPrefix(kv, "GEMINI_CLI_NO_RELAUNCH=") {
			return env
		}
	}
	return append(env, "GEMINI_CLI_NO_RELAUNCH=true")
}

// SystemPromptFile writes text as the CLI's system prompt, SYSTEM.md in a
// new private directory, and returns env with GEMINI_SYSTEM_MD naming it.
// The caller removes dir when the process that reads it is done; on an
// error (a StartError) nothing is left behind.
func SystemPromptFile(env []string, text string) (dir string, _ []string, _ error) {
	dir, err := os.MkdirTemp("", "gemini-mcp-")
	if err != nil {
		return "", nil, StartError("cannot create a temporary directory for the system prompt: "+err.Error(), err)
	}
	path := filepath.Join(dir, "SYSTEM.md")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		os.RemoveAll(dir)
		return "", nil, StartError("cannot write the system prompt file: "+err.Error(), err)
	}
	return dir, proc.SetEnv(env, "GEMINI_SYSTEM_MD", path), nil
}

// NotApplied names the tuning of t that the Gemini CLI cannot apply: it
// has no per-call temperature or thinking budget (0.61.0), so a turn that
// asks for them is answered without, and says so.
func NotApplied(t backend.Turn) []string {
	var n []string
	if t.Temperature != nil {
		n = append(n, "temperature: the Gemini CLI takes no per-call temperature")
	}
	if t.ThinkingMode != "" {
		n = append(n, "thinking_mode: the Gemini CLI takes no per-call thinking budget")
	}
	if t.IncludeThoughts {
		n = append(n, "include_thoughts: the Gemini CLI does not return its model's thoughts")
	}
	return n
}

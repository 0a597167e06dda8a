package expert

import "context"

// Debug is the debug expert tool.
var Debug = &Tool{
	name:        "debug",
	title:       "Debug with Gemini",
	description: "Root cause analysis, error investigation: Gemini analyses the error, its context and the given files, and recommends fixes in order.",
	role: "You are an expert debugger. Find the root cause of the error you are given: analyse stack traces, " +
		"rank the likely causes, give the steps to reproduce and confirm each, and recommend fixes in order of priority. " +
		"Refer to files by path and line number.",
	input: func() input { return new(DebugInput) },
	props: []prop{
		{name: "error_description", kind: "string", required: true, label: "Error description",
			desc: "The error or unexpected behaviour."},
		{name: "error_context", kind: "string", label: "Error context",
			desc: "Optional: stack traces, logs, the output around the error."},
		{name: "files", kind: "array", desc: "Optional: files or directories inside the project root that relate to the error."},
		{name: "previous_attempts", kind: "string", label: "Previous attempts",
			desc: "Optional: what was tried already, and what happened."},
		{name: "runtime_info", kind: "string", label: "Runtime information",
			desc: "Optional: the environment: versions, operating system, configuration."},
		thinkingMode("medium"),
		continuationID,
		temperature,
		googleSearch,
		codeExecution,
	},
}

// DebugInput is debug's arguments.
type DebugInput struct {
	ErrorDescription string   `json:"error_description"`
	ErrorContext     string   `json:"error_context,omitempty"`
	Files            []string `json:"files,omitempty"`
	PreviousAttempts string   `json:"previous_attempts,omitempty"`
	RuntimeInfo      string   `json:"runtime_info,omitempty"`
	Common
	Search
	Sandbox
}

func (in *DebugInput) headline() string { return in.ErrorDescription }

func (in *DebugInput) gather(ctx context.Context, d *Deps, id string) (*material, error) {
	return d.gatherFiles(ctx, id, in.Files)
}

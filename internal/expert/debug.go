package expert

import (
	"context"

	"github.com/google/jsonschema-go/jsonschema"
)

// Debug is the debug expert tool.
var Debug = &Tool{
	name:        "debug",
	title:       "Debug with Gemini",
	description: "Root cause analysis, error investigation: Gemini analyses the error, its context and the given files, and recommends fixes in order.",
	role: "You are an expert debugger. Find the root cause of the error you are given: analyse stack traces, " +
		"rank the likely causes, give the steps to reproduce and confirm each, and recommend fixes in order of priority. " +
		"Refer to files by path and line number.",
	input: func() input { return new(DebugInput) },
	extend: func(s *jsonschema.Schema) {
		commonSchema(s, "medium")
		searchSchema(s)
		sandboxSchema(s)
	},
}

// DebugInput is debug's arguments.
type DebugInput struct {
	ErrorDescription string   `json:"error_description" jsonschema:"The error or unexpected behaviour."`
	ErrorContext     string   `json:"error_context,omitempty" jsonschema:"Optional: stack traces, logs, the output around the error."`
	Files            []string `json:"files,omitempty" jsonschema:"Optional: files or directories inside the project root that relate to the error."`
	PreviousAttempts string   `json:"previous_attempts,omitempty" jsonschema:"Optional: what was tried already, and what happened."`
	RuntimeInfo      string   `json:"runtime_info,omitempty" jsonschema:"Optional: the environment: versions, operating system, configuration."`
	Common
	Search
	Sandbox
	Retrieval
	Backgrounded
}

func (in *DebugInput) headline() string { return in.ErrorDescription }

func (in *DebugInput) sections() []section {
	return []section{
		{"Error description", in.ErrorDescription},
		{"Error context", in.ErrorContext},
		{"Previous attempts", in.PreviousAttempts},
		{"Runtime information", in.RuntimeInfo},
	}
}

func (in *DebugInput) gather(ctx context.Context, d *Deps, id string) (*material, error) {
	return d.gatherFiles(ctx, id, in.Files)
}

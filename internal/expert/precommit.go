package expert

import (
	"context"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
)

// Precommit is the precommit expert tool.
var Precommit = &Tool{
	name:        "precommit",
	title:       "Pre-commit check with Gemini",
	description: "Automated quality gate before a commit: Gemini reviews the staged and unstaged changes of the git repository at path, checks for secrets, and ends with a go / no-go.",
	role: "You are a meticulous pre-commit reviewer. Review the changes you are given against the stated intent: " +
		"bugs, security issues and committed secrets, missing tests, documentation that no longer matches the code. " +
		"List the issues by severity with file and line. " + issueFormat + " " +
		"End with the verdict on a line of its own, `VERDICT: GO` or `VERDICT: NO-GO`, followed by the reason.",
	input:      func() input { return new(PrecommitInput) },
	output:     precommitOutput,
	structured: precommitStructured,
	extend: func(s *jsonschema.Schema) {
		withDefault(s, "include_staged", true)
		withDefault(s, "include_unstaged", true)
		oneOf(s, "review_type", reviewTypes[0], reviewTypes...)
		commonSchema(s, "medium")
	},
}

// PrecommitInput is precommit's arguments.
type PrecommitInput struct {
	Path            string `json:"path" jsonschema:"The root of the git repository whose changes to check, inside the project root."`
	IncludeStaged   bool   `json:"include_staged,omitempty" jsonschema:"Include the staged changes."`
	IncludeUnstaged bool   `json:"include_unstaged,omitempty" jsonschema:"Include the unstaged changes, new files included."`
	ReviewType      string `json:"review_type,omitempty" jsonschema:"The kind of review: full, security, performance or quick."`
	OriginalRequest string `json:"original_request,omitempty" jsonschema:"Optional: the user's intent, which the changes should fulfil."`
	Common
	Retrieval
}

func (in *PrecommitInput) headline() string { return in.Path }

func (in *PrecommitInput) sections() []section {
	return []section{{"Review type", in.ReviewType}, {"Original request", in.OriginalRequest}}
}

// gather reads the changes of the repository at path, not files: a diff
// is not a file, and is not recorded as sent.
func (in *PrecommitInput) gather(ctx context.Context, d *Deps, _ string) (*material, error) {
	if !in.IncludeStaged && !in.IncludeUnstaged {
		return nil, toolerr.ValidationErrors{
			{Field: "include_staged", Error: "include_staged and include_unstaged are both false, which leaves nothing to review: set one of them to true"},
		}
	}
	if d.Files == nil {
		return nil, toolerr.SystemError("this server cannot read git changes yet (no file context is configured): ask its operator, or use codereview with the changed files", nil)
	}
	preface := fmt.Sprintf("## Repository\n%s (staged changes: %s, unstaged changes: %s)\n\n",
		in.Path, yesNo(in.IncludeStaged), yesNo(in.IncludeUnstaged))
	// The budget is asked for only once there are changes to send: the
	// model's input may take a request to learn.
	budget := func() int { return d.changesBudget(ctx, in, preface) }
	cs, err := d.Files.Changes(ctx, in.Path, in.IncludeStaged, in.IncludeUnstaged, budget)
	if err != nil {
		return nil, err
	}
	return &material{
		files:   &filectx.Files{Text: cs.Text, Processed: cs.Processed, Skipped: cs.Skipped},
		heading: changesHeading,
		preface: preface,
		secrets: cs.Secrets,
		cut:     cs.Cut,
	}, nil
}

// changesHeading heads precommit's changes in the prompt.
const changesHeading = "Changes"

// DefaultInputLimit is the input of the Gemini models in tokens, for a
// backend that cannot say its model's.
const DefaultInputLimit = 1 << 20

// changesBudget is the tokens precommit's changes may take: the model's
// input less the rest of the prompt (the role, the arguments, the
// sections and their headings, counted in bytes, which are at least as
// many as their tokens) and a reserve for what the backend adds (the
// Gemini CLI's own instructions and tools, the secrets found).
func (d *Deps) changesBudget(ctx context.Context, in *PrecommitInput, preface string) int {
	limit := 0
	if d.InputLimit != nil {
		limit = d.InputLimit(ctx)
	}
	if limit <= 0 {
		limit = DefaultInputLimit
	}
	// A continued conversation's earlier turns are not counted here: the
	// backend says when they leave too little room.
	rest := len(Precommit.role) + len(in.OriginalRequest) + len(in.ReviewType) + len(preface) + 1024
	return max(limit-limit/20-rest, 1)
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

package expert

import (
	"context"

	"github.com/google/jsonschema-go/jsonschema"
)

// Codereview is the codereview expert tool.
var Codereview = &Tool{
	name:        "codereview",
	title:       "Review code with Gemini",
	description: "Code quality, security, bug detection: Gemini reviews the given files and lists issues from critical to low, with concrete fixes by line number.",
	role: "You are an expert code reviewer. Review the code you are given for bugs, security vulnerabilities, performance problems and quality. " +
		"List the issues from most to least severe (Critical, High, Medium, Low), each with its file and line numbers and a concrete fix. " +
		"Report only issues at or above the requested severity. " + issueFormat,
	input:      func() input { return new(CodereviewInput) },
	output:     codereviewOutput,
	structured: codereviewStructured,
	extend: func(s *jsonschema.Schema) {
		oneOf(s, "review_type", reviewTypes[0], reviewTypes...)
		oneOf(s, "severity_filter", "all", "critical", "high", "medium", "all")
		commonSchema(s, "medium")
	},
}

// CodereviewInput is codereview's arguments.
type CodereviewInput struct {
	Files          []string `json:"files" jsonschema:"Files or directories to review."`
	Context        string   `json:"context" jsonschema:"What the code is for and what the review should know about it."`
	ReviewType     string   `json:"review_type,omitempty" jsonschema:"The kind of review: full, security, performance or quick."`
	SeverityFilter string   `json:"severity_filter,omitempty" jsonschema:"The lowest severity to report: critical, high, medium or all."`
	Standards      string   `json:"standards,omitempty" jsonschema:"Optional: the coding standards the code should follow."`
	Common
	Retrieval
}

func (in *CodereviewInput) headline() string { return in.Context }

func (in *CodereviewInput) sections() []section {
	return []section{
		{"Context", in.Context},
		{"Review type", in.ReviewType},
		{"Severity filter", in.SeverityFilter},
		{"Coding standards", in.Standards},
	}
}

func (in *CodereviewInput) gather(ctx context.Context, d *Deps, id string) (*material, error) {
	return d.gatherFiles(ctx, id, in.Files)
}

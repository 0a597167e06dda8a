package expert

import "context"

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
	props: []prop{
		{name: "files", kind: "array", required: true, desc: "Files or directories to review."},
		{name: "context", kind: "string", required: true, label: "Context",
			desc: "What the code is for and what the review should know about it."},
		reviewType,
		{name: "severity_filter", kind: "string", enum: []string{"critical", "high", "medium", "all"}, def: "all",
			label: "Severity filter", desc: "The lowest severity to report: critical, high, medium or all."},
		{name: "standards", kind: "string", label: "Coding standards",
			desc: "Optional: the coding standards the code should follow."},
		thinkingMode("medium"),
		continuationID,
		temperature,
	},
}

// CodereviewInput is codereview's arguments.
type CodereviewInput struct {
	Files          []string `json:"files"`
	Context        string   `json:"context"`
	ReviewType     string   `json:"review_type"`
	SeverityFilter string   `json:"severity_filter"`
	Standards      string   `json:"standards,omitempty"`
	Common
}

func (in *CodereviewInput) headline() string { return in.Context }

func (in *CodereviewInput) gather(ctx context.Context, d *Deps, id string) (*material, error) {
	return d.gatherFiles(ctx, id, in.Files)
}

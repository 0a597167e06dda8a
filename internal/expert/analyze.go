package expert

import (
	"context"

	"github.com/google/jsonschema-go/jsonschema"
)

// Analyze is the analyze expert tool.
var Analyze = &Tool{
	name:        "analyze",
	title:       "Analyze code with Gemini",
	description: "Code exploration and understanding: Gemini reads the given files or directories and answers your question about them.",
	role: "You are an expert software analyst. Read the code you are given and answer the question about it: " +
		"its structure, how its parts work together, and what matters for the question. " +
		"Refer to files by path and line number, and say what you could not see.",
	input: func() input { return new(AnalyzeInput) },
	extend: func(s *jsonschema.Schema) {
		oneOf(s, "analysis_type", "general", "architecture", "performance", "security", "quality", "general")
		commonSchema(s, "medium")
		sandboxSchema(s)
	},
}

// AnalyzeInput is analyze's arguments.
type AnalyzeInput struct {
	Files        []string `json:"files" jsonschema:"Files or directories to analyze"`
	Question     string   `json:"question" jsonschema:"What to analyze or look for"`
	AnalysisType string   `json:"analysis_type,omitempty" jsonschema:"The kind of analysis: architecture, performance, security, quality or general."`
	Common
	Sandbox
	Retrieval
	Backgrounded
}

func (in *AnalyzeInput) headline() string { return in.Question }

func (in *AnalyzeInput) sections() []section {
	return []section{{"Question", in.Question}, {"Analysis type", in.AnalysisType}}
}

func (in *AnalyzeInput) gather(ctx context.Context, d *Deps, id string) (*material, error) {
	return d.gatherFiles(ctx, id, in.Files)
}

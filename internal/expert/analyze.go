package expert

import "context"

// Analyze is the analyze expert tool.
var Analyze = &Tool{
	name:        "analyze",
	title:       "Analyze code with Gemini",
	description: "Code exploration and understanding: Gemini reads the given files or directories and answers your question about them.",
	role: "You are an expert software analyst. Read the code you are given and answer the question about it: " +
		"its structure, how its parts work together, and what matters for the question. " +
		"Refer to files by path and line number, and say what you could not see.",
	input: func() input { return new(AnalyzeInput) },
	props: []prop{
		{name: "files", kind: "array", required: true, desc: "Files or directories to analyze"},
		{name: "question", kind: "string", required: true, label: "Question", desc: "What to analyze or look for"},
		{name: "analysis_type", kind: "string", enum: []string{"architecture", "performance", "security", "quality", "general"}, def: "general",
			label: "Analysis type", desc: "The kind of analysis: architecture, performance, security, quality or general."},
		thinkingMode("medium"),
		continuationID,
		temperature,
		codeExecution,
	},
}

// AnalyzeInput is analyze's arguments.
type AnalyzeInput struct {
	Files        []string `json:"files"`
	Question     string   `json:"question"`
	AnalysisType string   `json:"analysis_type"`
	Common
	Sandbox
}

func (in *AnalyzeInput) headline() string { return in.Question }

func (in *AnalyzeInput) gather(ctx context.Context, d *Deps, id string) (*material, error) {
	return d.gatherFiles(ctx, id, in.Files)
}

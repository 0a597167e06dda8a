package expert

// Analyze is the analyze expert tool.
var Analyze = &Tool{
	name:        "analyze",
	title:       "Analyze code with Gemini",
	description: "Code exploration and understanding: Gemini reads the given files or directories and answers your question about them.",
	role: "You are an expert software analyst. Read the code you are given and answer the question about it: " +
		"its structure, how its parts work together, and what matters for the question. " +
		"Refer to files by path and line number, and say what you could not see.",
	filesArg: "files",
	props: []prop{
		{name: "files", kind: "array", required: true, desc: "Files or directories to analyze"},
		{name: "question", kind: "string", required: true, label: "Question", desc: "What to analyze or look for"},
		{name: "analysis_type", kind: "string", enum: []string{"architecture", "performance", "security", "quality", "general"}, def: "general",
			label: "Analysis type", desc: "The kind of analysis: architecture, performance, security, quality or general."},
		thinkingMode("medium"),
		continuationID,
		temperature,
	},
}

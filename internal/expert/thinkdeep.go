package expert

import "context"

// Thinkdeep is the thinkdeep expert tool.
var Thinkdeep = &Tool{
	name:        "thinkdeep",
	title:       "Think deeper with Gemini",
	description: "Complex architecture, system design, strategic planning: Gemini extends, challenges and deepens your current analysis.",
	role: "You are a senior engineering thought partner for complex architecture, system design and strategic planning. " +
		"Extend and challenge the analysis you are given: find what it misses, weigh the alternatives and their trade-offs, " +
		"and end with concrete, prioritised recommendations. Refer to the files you are given by path and line number.",
	input: func() input { return new(ThinkdeepInput) },
	props: []prop{
		{name: "current_analysis", kind: "string", required: true, label: "Current analysis",
			desc: "Your current thinking or analysis, for Gemini to extend and challenge."},
		{name: "problem_context", kind: "string", label: "Problem context",
			desc: "Optional: the problem, its constraints and background."},
		{name: "focus_areas", kind: "array", label: "Focus areas",
			desc: "Optional: the aspects to focus on (e.g. performance, architecture, security)."},
		thinkingMode("high"),
		{name: "files", kind: "array",
			desc: "Optional: files or directories inside the project root to give Gemini as context."},
		continuationID,
		temperature,
		googleSearch,
	},
}

// ThinkdeepInput is thinkdeep's arguments.
type ThinkdeepInput struct {
	CurrentAnalysis string   `json:"current_analysis"`
	ProblemContext  string   `json:"problem_context,omitempty"`
	FocusAreas      []string `json:"focus_areas,omitempty"`
	Files           []string `json:"files,omitempty"`
	Common
	Search
}

func (in *ThinkdeepInput) headline() string { return in.CurrentAnalysis }

func (in *ThinkdeepInput) gather(ctx context.Context, d *Deps, id string) (*material, error) {
	return d.gatherFiles(ctx, id, in.Files)
}

package expert

import (
	"context"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Thinkdeep is the thinkdeep expert tool.
var Thinkdeep = &Tool{
	name:        "thinkdeep",
	title:       "Think deeper with Gemini",
	description: "Complex architecture, system design, strategic planning: Gemini extends, challenges and deepens your current analysis.",
	role: "You are a senior engineering thought partner for complex architecture, system design and strategic planning. " +
		"Extend and challenge the analysis you are given: find what it misses, weigh the alternatives and their trade-offs, " +
		"and end with concrete, prioritised recommendations. Refer to the files you are given by path and line number.",
	input: func() input { return new(ThinkdeepInput) },
	extend: func(s *jsonschema.Schema) {
		commonSchema(s, "high")
		searchSchema(s)
		// The specification lists files after thinking_mode.
		moveAfter(s, "files", "thinking_mode")
	},
}

// ThinkdeepInput is thinkdeep's arguments.
type ThinkdeepInput struct {
	CurrentAnalysis string   `json:"current_analysis" jsonschema:"Your current thinking or analysis, for Gemini to extend and challenge."`
	ProblemContext  string   `json:"problem_context,omitempty" jsonschema:"Optional: the problem, its constraints and background."`
	FocusAreas      []string `json:"focus_areas,omitempty" jsonschema:"Optional: the aspects to focus on (e.g. performance, architecture, security)."`
	Files           []string `json:"files,omitempty" jsonschema:"Optional: files or directories inside the project root to give Gemini as context."`
	Common
	Search
	Retrieval
	Backgrounded
}

func (in *ThinkdeepInput) headline() string { return in.CurrentAnalysis }

func (in *ThinkdeepInput) sections() []section {
	return []section{
		{"Current analysis", in.CurrentAnalysis},
		{"Problem context", in.ProblemContext},
		{"Focus areas", strings.Join(in.FocusAreas, ", ")},
	}
}

func (in *ThinkdeepInput) gather(ctx context.Context, d *Deps, id string) (*material, error) {
	return d.gatherFiles(ctx, id, in.Files)
}

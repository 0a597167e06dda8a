package backend

// ThinkingModes are the values Turn.ThinkingMode may take besides "", from
// the least thinking to the most. The tools offer exactly these; each
// backend maps them onto what its model takes (the API backend onto
// thinking budgets or levels, "off" onto a budget of 0 or the lowest
// level) or reports them as not applied.
var ThinkingModes = []string{"off", "minimal", "low", "medium", "high", "max"}

// The range of Turn.Temperature, as the Gemini API takes it (Gemini 2 and
// later models).
const (
	MinTemperature = 0.0
	MaxTemperature = 2.0
)

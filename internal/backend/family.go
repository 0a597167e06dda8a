package backend

// The backend families. A session belongs to the family that started it:
// the one-shot and warm backends both drive the Gemini CLI, share its
// session files and hand sessions to each other; the API backend keeps its
// own history. A session cannot move between families.
const (
	FamilyCLI = "cli"
	FamilyAPI = "api"
)

// Family returns the family of the backend named name (as --backend
// spells it).
func Family(name string) string {
	if name == "api" {
		return FamilyAPI
	}
	return FamilyCLI
}

// FamilyName describes a family for messages.
func FamilyName(family string) string {
	if family == FamilyAPI {
		return "the Gemini API backend (--backend api)"
	}
	return "the Gemini CLI backends (--backend warm or oneshot)"
}

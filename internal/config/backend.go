package config

// Backend names a backend as --backend spells it.
type Backend string

// The backends --backend accepts. Auto is a choice, not a backend: the
// app resolves it to warm or api.
const (
	BackendAuto    Backend = "auto"
	BackendWarm    Backend = "warm"
	BackendOneshot Backend = "oneshot"
	BackendAPI     Backend = "api"
)

// Family is the family a session belongs to: the family of the backend
// that started it, which each backend reports (backend.Backend's Family).
// The one-shot and warm backends both drive the Gemini CLI, share its
// session files and hand sessions to each other; the API backend keeps
// its own history. A session cannot move between families.
type Family = string

// The backend families, as session records store them.
const (
	FamilyCLI Family = "cli"
	FamilyAPI Family = "api"
)

// valid reports whether b is a backend --backend accepts.
func (b Backend) valid() bool {
	switch b {
	case BackendAuto, BackendWarm, BackendOneshot, BackendAPI:
		return true
	}
	return false
}

// FamilyName describes a family for messages.
func FamilyName(f Family) string {
	if f == FamilyAPI {
		return "the Gemini API backend (--backend api)"
	}
	return "the Gemini CLI backends (--backend warm or oneshot)"
}

// Package session is what the server knows of its sessions: their
// records (Record), the store that keeps them with the API backend's
// turns, answer pages and leases (Store, implemented by the embedded
// store, Redis and an in-memory store for tests), and session ids and
// references.
package session

import (
	"os"
	"path/filepath"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
)

// Record is what the server knows of one session.
type Record struct {
	ID      string    `json:"id"`
	Cwd     string    `json:"cwd"`
	Model   string    `json:"model,omitempty"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	Turns   int       `json:"turns"`
	// Owner is the id of the HTTP bearer token that started the session
	// ("" for stdio, HTTP without tokens, and records written before
	// owners were kept); over HTTP only that token may continue it.
	Owner string `json:"owner,omitempty"`
	// LastClient names the client that ran the latest turn ("token:…" or
	// "mcp:…", "" on stdio), so that "the newest session" can mean the
	// newest of the client asking.
	LastClient string `json:"lastClient,omitempty"`
	// Backend is the family of the backend that started the session: "cli"
	// (one-shot and warm, which share the CLI's session files) or "api".
	// Records written before it was kept have none, and count as "cli".
	Backend string `json:"backend,omitempty"`
	// Title is the opening words of the session's first prompt, for the
	// sessions tool.
	Title string `json:"title,omitempty"`
	// Host is the host whose Gemini CLI keeps the session's files (CLI
	// backends only): another host cannot continue it.
	Host string `json:"host,omitempty"`
	// SystemPrompt is the system prompt the session started with, which
	// its later turns keep.
	SystemPrompt string `json:"systemPrompt,omitempty"`
}

// Family returns the family of the backend that started the session.
func (r Record) Family() config.Family {
	if r.Backend == "" {
		return config.FamilyCLI
	}
	return r.Backend
}

// Turn is what Touch records of one finished turn.
type Turn struct {
	Cwd    string
	Model  string
	Owner  string // kept from the first turn on
	Client string
	// Backend is the family of the backend that ran the turn ("cli" or
	// "api"); kept from the first turn on.
	Backend string
	// Title, Host and SystemPrompt are kept from the first turn on (see
	// Record).
	Title        string
	Host         string
	SystemPrompt string
}

// DefaultDir is the state directory, where the embedded store lives unless
// configured: the user's state
// directory ($XDG_STATE_HOME or ~/.local/state on Linux and other Unix),
// the user's config directory on macOS and Windows.
func DefaultDir() (string, error) {
	switch {
	case os.Getenv("XDG_STATE_HOME") != "":
		return filepath.Join(os.Getenv("XDG_STATE_HOME"), "gemini-mcp-server"), nil
	case isUnixLike():
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(home, ".local", "state", "gemini-mcp-server"), nil
	}
	cfg, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cfg, "gemini-mcp-server"), nil
}

// Package access holds who may continue which session, and where a turn
// runs: a session started with a bearer token is that token's unless the
// operator shares sessions (owners.go); which session a turn continues,
// and in which directory (target.go); and the directories calls may run
// in, within the operator's allowed roots (roots.go). The turn pipeline
// (internal/conversation) asks it before a turn runs.
package access

import (
	"log/slog"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// Rules are the server's rules of access to its sessions and directories.
type Rules struct {
	// Store keeps the sessions' records.
	Store      session.Store
	DefaultCwd string // where calls without cwd run
	// AllowedRoots, when not nil, are the only directories (with their
	// subdirectories) calls may run in, as resolved by ResolveRoots.
	AllowedRoots []string
	// Remote, Authenticated (tokens are required) and ShareSessions
	// describe the HTTP transport; all are false on stdio.
	Remote, Authenticated, ShareSessions bool
	// Host names this host in the records of CLI sessions, whose files
	// stay on it.
	Host string
	// Family is the family of the backend serving the tools: a session
	// belongs to the family that started it.
	Family func() config.Family
	// Log receives the refusals that are the server's own fault; nil
	// logs nothing.
	Log *slog.Logger
}

package session

import (
	"crypto/rand"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
)

// NewUUID returns a random (version 4) UUID in the CLI's lower-case form.
func NewUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// indexRE matches a CLI session index. It is compiled on first use:
// compiling at package initialisation would add to every start-up, which
// MCP clients wait for.
var indexRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[1-9][0-9]{0,5}$`) })

// IsUUID reports whether s is a UUID in the 8-4-4-4-12 hex form the CLI
// uses, in either case.
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
	}
	return true
}

// Ref is a validated reference to a CLI session: a UUID (lower-cased),
// "latest", or a 1-based index into the CLI's session list for a directory.
type Ref struct {
	Value string
	Kind  RefKind
}

// RefKind says which form a Ref takes.
type RefKind int

// The forms a session reference can take.
const (
	RefUUID RefKind = iota + 1
	RefLatest
	RefIndex
)

// ParseSessionRef validates a sessionId argument. The empty string is not a
// reference; callers decide what an absent sessionId means.
func ParseSessionRef(s string) (Ref, error) {
	t := strings.TrimSpace(s)
	switch {
	case IsUUID(t):
		return Ref{Value: strings.ToLower(t), Kind: RefUUID}, nil
	case strings.EqualFold(t, "latest"):
		return Ref{Value: "latest", Kind: RefLatest}, nil
	case indexRE().MatchString(t):
		return Ref{Value: t, Kind: RefIndex}, nil
	case t == "":
		// Blank is not absent: white space names no session, not the
		// latest one.
		return Ref{}, fmt.Errorf("invalid sessionId %q: it is blank; omit sessionId to continue this client's most recent session, or pass a session UUID (as returned in _meta.sessionId), \"latest\", or a session index such as 1", msg.Clip(s, 80))
	}
	return Ref{}, fmt.Errorf("invalid sessionId %q: expected a session UUID (as returned in _meta.sessionId), \"latest\", or a session index such as 1", msg.Clip(s, 80))
}

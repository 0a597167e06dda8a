package gemini

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"
)

// Bad input is refused here, before any process starts, so that nothing a
// calling model sends can reach the CLI's argument parser unchecked.

// The expressions are compiled on first use: compiling at package
// initialisation would add to every start-up, which MCP clients wait for.
var (
	indexRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[1-9][0-9]{0,5}$`) })
	modelRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`) })
)

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

// SessionRef is a validated reference to a CLI session: a UUID (lower-cased),
// "latest", or a 1-based index into the CLI's session list for a directory.
type SessionRef struct {
	Value string
	Kind  RefKind
}

// RefKind says which form a SessionRef takes.
type RefKind int

// The forms a session reference can take.
const (
	RefUUID RefKind = iota + 1
	RefLatest
	RefIndex
)

// ParseSessionRef validates a sessionId argument. The empty string is not a
// reference; callers decide what an absent sessionId means.
func ParseSessionRef(s string) (SessionRef, error) {
	t := strings.TrimSpace(s)
	switch {
	case IsUUID(t):
		return SessionRef{Value: strings.ToLower(t), Kind: RefUUID}, nil
	case strings.EqualFold(t, "latest"):
		return SessionRef{Value: "latest", Kind: RefLatest}, nil
	case indexRE().MatchString(t):
		return SessionRef{Value: t, Kind: RefIndex}, nil
	}
	return SessionRef{}, fmt.Errorf("invalid sessionId %q: expected a session UUID (as returned in _meta.sessionId), \"latest\", or a session index such as 1", clip(s, 80))
}

// ValidateModel checks a model name against a conservative character set:
// it travels in argv and in the API's URL path.
func ValidateModel(m string) error {
	if modelRE().MatchString(m) {
		return nil
	}
	return fmt.Errorf("invalid model %q: use a Gemini model name such as gemini-2.5-pro (letters, digits, '.', '_' and '-', at most 100 characters, not starting with '-')", clip(m, 80))
}

// ValidateText checks a prompt or system prompt: it must be valid UTF-8,
// hold no NUL byte (argv cannot carry one) and stay within max bytes.
// Emptiness is the caller's concern.
func ValidateText(name, s string, max int) error {
	if max > 0 && len(s) > max {
		return fmt.Errorf("%s is too large: %d bytes, the limit is %d bytes (--max-prompt-bytes)", name, len(s), max)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("%s contains a NUL byte, which cannot be passed to the gemini CLI", name)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not valid UTF-8", name)
	}
	return nil
}

// ResolveDir turns a cwd argument into the absolute, symlink-free path of an
// existing directory. The CLI keys its sessions by the working directory as
// the operating system reports it (symlinks resolved), so the same form must
// be recorded here. A leading "~/" means the user's home directory; a
// relative path is taken against base.
func ResolveDir(dir, base string) (string, error) {
	orig := dir
	if dir == "~" || strings.HasPrefix(dir, "~/") || strings.HasPrefix(dir, `~\`) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cwd %q: cannot expand ~: %v", orig, err)
		}
		dir = filepath.Join(home, dir[1:])
	}
	if strings.IndexByte(dir, 0) >= 0 {
		return "", errors.New("cwd contains a NUL byte")
	}
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(base, dir)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("cwd %q does not exist", orig)
		}
		return "", fmt.Errorf("cwd %q: %v", orig, err)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("cwd %q: %v", orig, err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("cwd %q is not a directory", orig)
	}
	return filepath.Clean(real), nil
}

// clip shortens s for inclusion in an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

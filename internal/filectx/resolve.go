package filectx

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/pathx"
)

// Sandbox is the project root and the paths under it that must not be
// read. Build it with NewSandbox.
type Sandbox struct {
	root      string
	forbidden []string
}

// NewSandbox checks root (an absolute path of an existing directory) and
// resolves it and the forbidden paths, so that later checks compare
// resolved paths with resolved paths.
func NewSandbox(root string, forbidden []string) (*Sandbox, error) {
	if !filepath.IsAbs(root) {
		return nil, &Error{Category: CategorySystem, Message: "the project root " + root + " is not an absolute path: set --project-root to an absolute directory"}
	}
	r, err := filepath.EvalSymlinks(filepath.Clean(root))
	if err != nil {
		return nil, &Error{Category: CategorySystem, Err: err, Message: "the project root " + root + " cannot be resolved: " + err.Error() + "; set --project-root to an existing directory"}
	}
	if st, err := os.Stat(r); err != nil || !st.IsDir() {
		return nil, &Error{Category: CategorySystem, Err: err, Message: "the project root " + root + " is not a directory: set --project-root to an existing directory"}
	}
	s := &Sandbox{root: r}
	for _, f := range forbidden {
		if f == "" {
			continue
		}
		f = filepath.Clean(f)
		// A forbidden path that does not exist yet is kept as written; one
		// that exists is kept in both forms, so that neither spelling
		// slips through.
		s.forbidden = append(s.forbidden, f)
		if rf, err := filepath.EvalSymlinks(f); err == nil && rf != f {
			s.forbidden = append(s.forbidden, rf)
		}
	}
	return s, nil
}

// Root returns the resolved project root.
func (s *Sandbox) Root() string { return s.root }

func (s *Sandbox) forbiddenPath(p string) bool {
	for _, f := range s.forbidden {
		if pathx.Within(f, p) {
			return true
		}
	}
	return false
}

// Rel returns p (resolved, inside the root) relative to the root, with
// forward slashes: the form shown to Gemini and used as the Seen key.
func (s *Sandbox) Rel(p string) string {
	rel, err := filepath.Rel(s.root, p)
	if err != nil {
		return filepath.ToSlash(p)
	}
	return filepath.ToSlash(rel)
}

// Resolved is a files entry after the sandbox checks: the resolved path
// and what it is.
type Resolved struct {
	Entry string // as the caller wrote it
	Path  string // absolute, symlinks resolved, inside the root
	Rel   string // relative to the root, slash-separated ("." for the root)
	Info  fs.FileInfo
}

// Resolve checks one files entry and returns where it leads. Errors are
// *Error: CategorySecurity for anything outside the sandbox or not a
// regular file or directory, CategoryValidation for an empty or missing
// entry, CategorySystem when the file system fails.
func (s *Sandbox) Resolve(entry string) (Resolved, error) {
	shown := msg.Clip(entry, 200)
	if strings.TrimSpace(entry) == "" {
		return Resolved{}, validationError(entry, "a files entry is empty: name a file or directory inside the project root %s", s.root)
	}
	if strings.IndexByte(entry, 0) >= 0 {
		return Resolved{}, validationError(entry, "the files entry %q holds a NUL byte: name a file or directory inside the project root %s", shown, s.root)
	}
	p := entry
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.root, p)
	}
	p = filepath.Clean(p)
	// The lexical check comes before any look-up, so that the answer for
	// a path outside the root does not depend on whether it exists.
	if !pathx.Within(s.root, p) {
		return Resolved{}, securityError(entry, "the files entry %q is outside the project root %s: name files or directories inside it (relative paths are taken against the root)", shown, s.root)
	}
	if s.forbiddenPath(p) {
		return Resolved{}, securityError(entry, "the files entry %q is inside this server's own state directory, which is never sent: name your project's files instead", shown)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Resolved{}, validationError(entry, "the files entry %q does not exist under the project root %s: check the path (relative paths are taken against the root)", shown, s.root)
		}
		return Resolved{}, systemError(entry, err, "the files entry %q cannot be resolved: %v", shown, msg.ClipPath(err, 200))
	}
	if !pathx.Within(s.root, real) {
		return Resolved{}, securityError(entry, "the files entry %q leads through a symbolic link to %s, outside the project root %s: name files inside the root", shown, real, s.root)
	}
	if s.forbiddenPath(real) {
		return Resolved{}, securityError(entry, "the files entry %q leads into this server's own state directory, which is never sent: name your project's files instead", shown)
	}
	info, err := os.Lstat(real)
	if err != nil {
		return Resolved{}, systemError(entry, err, "the files entry %q cannot be read: %v", shown, msg.ClipPath(err, 200))
	}
	if !info.Mode().IsRegular() && !info.IsDir() {
		return Resolved{}, securityError(entry, "the files entry %q is a %s, not a regular file or directory: only files and directories are sent", shown, modeName(info.Mode()))
	}
	return Resolved{Entry: entry, Path: real, Rel: s.Rel(real), Info: info}, nil
}

func modeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeDevice != 0 && m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device file"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	default:
		return "special file"
	}
}

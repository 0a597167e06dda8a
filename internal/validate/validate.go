// Package validate checks what a tool call brings (prompts, model names,
// working directories) before any backend sees it.
package validate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
)

// Bad input is refused here, before any process starts, so that nothing a
// calling model sends can reach the CLI's argument parser unchecked.

// The expressions are compiled on first use: compiling at package
// initialisation would add to every start-up, which MCP clients wait for.
var (
	modelRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`) })
)

// Model checks a model name against a conservative character set:
// it travels in argv and in the API's URL path.
func Model(m string) error {
	if modelRE().MatchString(m) {
		return nil
	}
	return fmt.Errorf("invalid model %q: use a Gemini model name such as gemini-2.5-pro (letters, digits, '.', '_' and '-', at most 100 characters, not starting with '-')", msg.Clip(m, 80))
}

// TooLarge is Text's error for a text of n bytes, over max.
func TooLarge(name string, n, max int) error {
	return fmt.Errorf("%s is too large: %d bytes, the limit is %d bytes (--max-prompt-bytes)", name, n, max)
}

// Text checks a prompt or system prompt: it must be valid UTF-8,
// hold no NUL byte (argv cannot carry one) and stay within max bytes.
// Emptiness is the caller's concern.
func Text(name, s string, max int) error {
	if max > 0 && len(s) > max {
		return TooLarge(name, len(s), max)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("%s contains a NUL byte, which cannot be passed to the gemini CLI", name)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not valid UTF-8", name)
	}
	return nil
}

// maxShownDir is how much of a cwd argument its errors quote.
const maxShownDir = 200

// ResolveDir turns a cwd argument into the absolute, symlink-free path of an
// existing directory. The CLI keys its sessions by the working directory as
// the operating system reports it (symlinks resolved), so the same form must
// be recorded here. A leading "~/" means the user's home directory; a
// relative path is taken against base.
func ResolveDir(dir, base string) (string, error) {
	orig := msg.Clip(dir, maxShownDir)
	if dir == "~" || strings.HasPrefix(dir, "~/") || strings.HasPrefix(dir, `~\`) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("cwd %q: cannot expand ~: %w", orig, err)
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
		return "", fmt.Errorf("cwd %q: %w", orig, msg.ClipPath(err, maxShownDir))
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", fmt.Errorf("cwd %q: %w", orig, msg.ClipPath(err, maxShownDir))
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("cwd %q is not a directory", orig)
	}
	return filepath.Clean(real), nil
}

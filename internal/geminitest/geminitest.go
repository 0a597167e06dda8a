// Package geminitest provides a fake Gemini CLI for tests, and the types and rules that tests
// share with it.
//
// The fake lives in the fakegemini sub-directory. It is a real executable, so the argv, the
// environment, stdin, the exit code and the timing that a wrapper sees are real too. Build it once
// per test binary with [RunWithFake] from TestMain, or with [BuildFake].
//
// The fake mirrors @google/gemini-cli 0.61.0 in headless mode: the flags, the plain-text and JSON
// output formats, sessions keyed by the exact working directory, exit codes and the noise on
// stderr. Its answer is a deterministic function of its input (see [Answer]), so tests can assert
// on it. Directives written anywhere in the prompt make it misbehave:
//
//	[[exit:N]]      fail with exit code N (144..255 are API HTTP statuses N+256); the turn is not saved
//	[[nosession]]   leave session_id out of the JSON output; the session is still saved
//	[[empty]]       answer with an empty response
//	[[badjson]]     print "this is not json" on stdout and exit 0
//	[[sleep:MS]]    sleep MS milliseconds before answering
//	[[hang]]        block until killed or until the self-timeout
//	[[ignoreterm]]  ignore SIGINT and SIGTERM, then hang
//	[[child]]       start a child process in the same process group, then hang
//	[[stdout:N]]    make the response exactly N bytes of varied text
//	[[stderr:N]]    write N bytes of noise to stderr before the normal output
//
// Every invocation exits by itself with [ExitSelfTimeout] after [EnvSelfTimeout] (default
// [DefaultSelfTimeout]), so a broken test cannot leave a process behind for long. When [EnvLog]
// names a file, every invocation appends one [Invocation] to it as a JSON line; read it back with
// [ReadLog].
package geminitest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Environment variables that steer the fake. Other variables the fake reads are the real CLI's
// own: GEMINI_SYSTEM_MD, GEMINI_MODEL and HOME.
const (
	// EnvHome is the directory under which the fake keeps its sessions. When it is unset the fake
	// uses $HOME/.fake-gemini.
	EnvHome = "FAKE_GEMINI_HOME"
	// EnvLog names a file to which every invocation appends one JSON line (see [Invocation]).
	EnvLog = "FAKE_GEMINI_LOG"
	// EnvSelfTimeout is a Go duration after which any invocation exits with [ExitSelfTimeout].
	EnvSelfTimeout = "FAKE_GEMINI_SELF_TIMEOUT"
	// EnvVersion is what --version prints; it defaults to [DefaultVersion].
	EnvVersion = "FAKE_GEMINI_VERSION"
	// EnvNoSessionIDFlag set to "1" makes --session-id an unknown flag, as in CLIs before it existed.
	EnvNoSessionIDFlag = "FAKE_GEMINI_NO_SESSION_ID_FLAG"
)

// Defaults of the fake.
const (
	// DefaultModel is the model used when neither -m nor GEMINI_MODEL names one.
	DefaultModel = "gemini-2.5-pro"
	// DefaultVersion is what --version prints when [EnvVersion] is unset.
	DefaultVersion = "0.61.0-fake"
	// DefaultSelfTimeout is how long an invocation may live when [EnvSelfTimeout] is unset.
	DefaultSelfTimeout = 60 * time.Second
	// ExitSelfTimeout is the exit code of an invocation that ran into its self-timeout.
	ExitSelfTimeout = 99
)

// Answer returns the response text the fake gives for prompt. turn is the 1-based number of the
// turn within its session, counting this one; model is the model in use; systemPrompt is the
// content of the GEMINI_SYSTEM_MD file, or "" when there is none.
//
// The text shows everything a wrapper could get wrong: the system prompt's first line ("none" when
// that line is empty), the prompt's length in bytes, the first 12 hex digits of its SHA-256, and its
// first 60 runes with each "\n" and "\r" replaced by a space.
func Answer(turn int, model, systemPrompt, prompt string) string {
	system := firstLine(systemPrompt)
	if system == "" {
		system = "none"
	}
	sum := sha256.Sum256([]byte(prompt))
	head := strings.NewReplacer("\n", " ", "\r", " ").Replace(firstRunes(prompt, 60))
	return fmt.Sprintf("fake-gemini turn=%d model=%s system=%s len=%d sha256=%s prompt=%s",
		turn, model, system, len(prompt), hex.EncodeToString(sum[:])[:12], head)
}

// SessionDir returns the directory in which the fake keeps the sessions started in cwd. home is
// the fake's home: $FAKE_GEMINI_HOME, or $HOME/.fake-gemini. Like the real CLI, the fake keys
// sessions by the exact working directory, so cwd must be spelled as the fake's os.Getwd sees it.
func SessionDir(home, cwd string) string {
	sum := sha256.Sum256([]byte(cwd))
	return filepath.Join(home, "sessions", hex.EncodeToString(sum[:])[:16])
}

// SessionTitle returns the title the fake gives a session whose first prompt is prompt: its first
// line, cut to 40 runes. --list-sessions shows it.
func SessionTitle(prompt string) string {
	return firstRunes(firstLine(prompt), 40)
}

// firstLine returns s up to its first line break, without a trailing "\r".
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSuffix(line, "\r")
}

// firstRunes returns at most the first n runes of s.
func firstRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

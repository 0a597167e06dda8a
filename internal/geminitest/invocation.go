package geminitest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// Kinds of stdin the fake can be given, as recorded in [Invocation.StdinKind].
const (
	// StdinDevNull is the null device, which os/exec opens when Cmd.Stdin is nil.
	StdinDevNull = "devnull"
	// StdinPipe is a pipe, which os/exec makes when Cmd.Stdin is a reader other than *os.File.
	StdinPipe = "pipe"
	// StdinFile is a regular file.
	StdinFile = "file"
	// StdinOther is anything else: a terminal, a socket, or a stdin that could not be examined.
	StdinOther = "other"
)

// Invocation is one line of the fake's invocation log (see [EnvLog]): what one run of the fake was
// given. The fake writes it before doing any work, so even a run that fails or hangs leaves one.
// A run with the [[child]] directive writes a second line, identical but for ChildPid.
type Invocation struct {
	// Pid, Ppid and Pgid identify the fake's process, its parent and its process group. Pgid is 0
	// on systems without process groups.
	Pid  int `json:"pid"`
	Ppid int `json:"ppid"`
	Pgid int `json:"pgid"`
	// Argv is the command line without the program name (os.Args[1:]).
	Argv []string `json:"argv"`
	// Cwd is the working directory as os.Getwd reports it.
	Cwd string `json:"cwd"`
	// StdinKind is one of StdinDevNull, StdinPipe, StdinFile and StdinOther.
	StdinKind string `json:"stdinKind"`
	// StdinBytes is how many bytes the fake read from stdin. It is 0 when the run ended before
	// reading stdin (a bad flag, --version, --list-sessions), when stdin is a terminal, and for
	// --acp, which logs its start before it reads anything (see [EnvACPLog] for what it reads).
	StdinBytes int `json:"stdinBytes"`
	// Prompt is the prompt as assembled from stdin and the prompt argument; "" for --acp.
	Prompt string `json:"prompt"`
	// SystemMdPath is the absolute path of the system prompt file that GEMINI_SYSTEM_MD names, even
	// when that file is missing, and SystemMd is its content. Both are empty when GEMINI_SYSTEM_MD
	// names no file or the run ended before reading it.
	SystemMdPath string `json:"systemMdPath"`
	SystemMd     string `json:"systemMd"`
	// Env holds those of GEMINI_SYSTEM_MD, GEMINI_CLI_NO_RELAUNCH and GEMINI_MODEL that were set,
	// so a missing key means an unset variable and an empty value an empty one.
	Env map[string]string `json:"env"`
	// ChildPid is the pid of the child started by [[child]], or 0.
	ChildPid int `json:"childPid"`
}

// ReadLog returns the invocations logged in the file at path, oldest first. A file that does not
// exist means that the fake never ran, so ReadLog returns no invocations and no error for it.
func ReadLog(path string) ([]Invocation, error) {
	return readJSONL[Invocation](path, "fake gemini log")
}

// WaitInvocation polls the fake's log at path until an invocation
// satisfies ok, and returns the first that does; the test fails if none
// does within limit (a guard against a hang, not a timing assumption: the
// fake logs each invocation as soon as it starts). The log is a file the
// fake appends to, so polling it is how a test hears the event.
func WaitInvocation(t interface {
	Helper()
	Fatalf(format string, args ...any)
}, path string, limit time.Duration, ok func(Invocation) bool) Invocation {
	t.Helper()
	for deadline := time.Now().Add(limit); ; time.Sleep(10 * time.Millisecond) {
		all, err := ReadLog(path)
		if err != nil {
			t.Fatalf("%v", err)
		}
		for _, inv := range all {
			if ok(inv) {
				return inv
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fake gemini logged no such invocation within %s (%d logged)", limit, len(all))
		}
	}
}

// HasChild reports whether the invocation started its [[child]].
func HasChild(i Invocation) bool { return i.ChildPid != 0 }

// readJSONL decodes the JSON values logged one per line in the file at
// path; what names the log in errors. A missing file holds no entries. A
// decoder rather than a line scanner, because a logged prompt can be far
// longer than a scanner's default line limit.
func readJSONL[T any](path, what string) ([]T, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	var out []T
	for {
		var v T
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, fmt.Errorf("reading %s %s, entry %d: %w", what, path, len(out)+1, err)
		}
		out = append(out, v)
	}
}

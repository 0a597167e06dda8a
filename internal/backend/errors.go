package backend

// Kind classifies a failed call, so that callers (and tests) can tell them
// apart without matching on message text.
type Kind string

// The kinds of failure a call can end in.
const (
	KindNotFound     Kind = "not-found"      // the gemini executable could not be found
	KindStart        Kind = "start"          // the process could not be started
	KindAuth         Kind = "auth"           // exit 41
	KindInput        Kind = "input"          // exit 42
	KindSession      Kind = "session"        // exit 42 while resuming a session
	KindConfig       Kind = "config"         // exit 52
	KindTurnLimit    Kind = "turn-limit"     // exit 53
	KindTool         Kind = "tool"           // exit 54
	KindUntrusted    Kind = "untrusted"      // exit 55
	KindCancelled    Kind = "cancelled"      // exit 130, or the caller cancelled
	KindTimeout      Kind = "timeout"        // the server's per-call limit ran out
	KindAPI          Kind = "api"            // an HTTP status from the Gemini API
	KindFailed       Kind = "failed"         // any other non-zero exit
	KindBadOutput    Kind = "bad-output"     // exit 0 without the expected JSON
	KindEmpty        Kind = "empty"          // exit 0 with an empty answer
	KindOutputTooBig Kind = "output-too-big" // stdout grew past its cap
)

// Error is a failed gemini call, with what a person needs to act on it.
// Each backend builds its errors with a constructor per kind.
type Error struct {
	Kind   Kind
	Reason string // the human explanation, one or a few sentences
	// Exited says the CLI exited by itself, with ExitCode. A CLI that did
	// not run, was stopped by this server, was killed by a signal or ran
	// warm (whose process serves on) has no exit code.
	Exited   bool
	ExitCode int
	Signal   string // the signal that killed the CLI ("SIGKILL"), or ""
	Status   int    // the API's HTTP status, for KindAPI
	Stderr   string // a bounded tail of the CLI's stderr (CLI backends)
	Ran      bool   // whether a gemini process ran at all
	// Err is the cause, when there is one: context.Canceled for a
	// cancelled call, context.DeadlineExceeded for a timeout, an OS error.
	Err error
}

func (e *Error) Error() string { return e.Reason }

// Unwrap returns the cause, so that errors.Is(err, context.Canceled) holds
// for a cancelled call.
func (e *Error) Unwrap() error { return e.Err }

// SetRan records that a process ran and what of its stderr to show.
func (e *Error) SetRan(stderr string) *Error {
	e.Ran, e.Stderr = true, stderr
	return e
}

// SetExited records the CLI's own exit code.
func (e *Error) SetExited(code int) *Error {
	e.Exited, e.ExitCode = true, code
	return e
}

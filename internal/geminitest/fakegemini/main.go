// Command fakegemini is a stand-in for the Gemini CLI (gemini) in tests. It mimics the command
// line, output formats, sessions, exit codes and stderr noise of @google/gemini-cli 0.61.0 in
// headless mode, without a model: its answer is computed from its input. Package geminitest
// documents its behaviour, builds it and decodes its invocation log.
//
// Nothing but what the real CLI would print goes to stdout. Diagnostics for tests, such as the
// line announcing that the fake now hangs, go to stderr, where the real CLI is noisy too.
package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// envChild marks the child process that the [[child]] directive starts.
const envChild = "FAKE_GEMINI_CHILD"

// Lines the fake writes to stderr so that its own tests can wait for a state instead of sleeping.
const (
	hangingLine      = "fake-gemini: hanging"
	ignoringLine     = "fake-gemini: ignoring SIGINT and SIGTERM"
	ignoredLine      = "fake-gemini: ignored signal"
	childLine        = "fake-gemini: started child pid"
	selfTimeoutLine  = "fake-gemini: self-timeout after"
	colorWarningLine = "Warning: 256-color support not detected. Using a terminal with at least 256-color support is recommended for a better visual experience."
)

func main() {
	os.Exit(run())
}

// run executes one invocation and returns its exit code.
func run() int {
	err := runE()
	var ee *exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ee.message != "" {
			fmt.Fprintln(os.Stderr, ee.message)
		}
		return ee.code
	default:
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 1
	}
}

// runE executes one invocation. Its steps follow the real CLI's order: flags, then --version,
// --list-sessions and --acp, then input, then the session, then the answer.
func runE() error {
	if os.Getenv(envChild) == "1" {
		return runChild()
	}
	if err := startWatchdog(); err != nil {
		return err
	}
	if err := setupClock(); err != nil {
		return err
	}
	inv, err := newInvocation()
	if err != nil {
		return err
	}
	opts, err := parseArgs(inv.Argv, os.Getenv(geminitest.EnvNoSessionIDFlag) == "1")
	if err != nil {
		return logThen(inv, err)
	}
	switch {
	case opts.version:
		return logThen(inv, printVersion())
	case opts.list:
		return logThen(inv, listSessions(inv.Cwd))
	case opts.acp:
		return runACP(opts, inv)
	}
	in, err := readInput(opts, &inv)
	if err != nil {
		return logThen(inv, err)
	}
	// Signals are ignored before the log line is written, so a test that waits for that line
	// cannot race the fake's signal handling.
	if in.directives.ignoreTerm {
		ignoreSignals()
	}
	if err := writeLog(inv); err != nil {
		return err
	}
	return answer(opts, in, inv)
}

// exitError ends an invocation with an exit code and, unless message is empty, a message on
// stderr.
type exitError struct {
	code    int
	message string
}

func (e *exitError) Error() string { return fmt.Sprintf("exit %d: %s", e.code, e.message) }

// failf returns an exitError whose message is formatted like fmt.Sprintf.
func failf(code int, format string, a ...any) error {
	return &exitError{code: code, message: fmt.Sprintf(format, a...)}
}

// usageErrorf returns a command-line error: exit 1 with the message followed by the help text,
// as yargs prints it.
func usageErrorf(format string, a ...any) error {
	return &exitError{code: 1, message: fmt.Sprintf(format, a...) + "\n\n" + usage}
}

// logThen writes the invocation log line and then returns err, so that runs which end early are
// logged too.
func logThen(inv invocation, err error) error {
	if logErr := writeLog(inv); logErr != nil {
		return logErr
	}
	return err
}

// printVersion prints the version like the real CLI's --version.
func printVersion() error {
	version := os.Getenv(geminitest.EnvVersion)
	if version == "" {
		version = geminitest.DefaultVersion
	}
	fmt.Println(version)
	return nil
}

// startWatchdog makes the process exit with geminitest.ExitSelfTimeout once the self-timeout has
// passed, whatever it is doing, so that no test can leave a fake running for long.
func startWatchdog() error {
	limit := geminitest.DefaultSelfTimeout
	if v := os.Getenv(geminitest.EnvSelfTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return failf(1, "fake-gemini: %s=%q is not a positive Go duration", geminitest.EnvSelfTimeout, v)
		}
		limit = d
	}
	time.AfterFunc(limit, func() {
		fmt.Fprintf(os.Stderr, "%s %s\n", selfTimeoutLine, limit)
		os.Exit(geminitest.ExitSelfTimeout)
	})
	return nil
}

// hang blocks until the process is killed or the watchdog ends it. The watchdog's pending timer
// keeps the Go runtime from treating the blocked program as deadlocked.
func hang() {
	fmt.Fprintf(os.Stderr, "%s (pid %d)\n", hangingLine, os.Getpid())
	select {}
}

// runChild is the whole life of the child started by [[child]]: it only waits to be killed,
// holding the stdout and stderr it inherited, as a real CLI's helper process would.
func runChild() error {
	if err := startWatchdog(); err != nil {
		return err
	}
	select {}
}

// usage is the help text printed after a command-line error.
const usage = `Usage: gemini [options] [command]

Gemini CLI - Launch an interactive CLI, use -p/--prompt for non-interactive mode

Options:
  -m, --model                     Model                                 [string]
  -p, --prompt                    Prompt. Appended to input on stdin (if any).
                                                                        [string]
  -s, --sandbox                   Run in sandbox?                      [boolean]
  -y, --yolo                      Automatically accept all actions     [boolean]
      --approval-mode             Set the approval mode
                             [string] [choices: "default", "auto_edit", "yolo", "plan"]
      --allowed-mcp-server-names  Allowed MCP server names               [array]
  -e, --extensions                A list of extensions to use            [array]
  -r, --resume                    Resume a previous session: "latest", an index
                                  or a session ID                       [string]
      --session-id                Start a new session with this ID      [string]
      --list-sessions             List available sessions and exit     [boolean]
      --include-directories       Additional directories to include      [array]
      --skip-trust                Trust the current folder for this session
                                                                       [boolean]
  -o, --output-format             The format of the CLI output.
                              [string] [choices: "text", "json", "stream-json"]
      --acp                       Starts the agent in ACP mode         [boolean]
      --experimental-acp          Starts the agent in ACP mode (deprecated, use
                                  --acp instead)                       [boolean]
  -v, --version                   Show version number                  [boolean]`

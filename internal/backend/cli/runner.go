// Package cli is the one-shot backend: it runs the Gemini CLI headless,
// one process per turn, with `--output-format json`. It builds the command
// line, parses what the CLI prints, and turns failures into typed errors
// that say what to do; the warm backend (package acp) uses the same
// command, flags and errors.
package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/proc"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// Options is the operator's configuration of every CLI call. None of it is
// reachable from tool arguments.
type Options struct {
	Gemini string // executable name or path; "" means "gemini" in PATH
	Env    []string
	// DefaultModel is passed as -m when a call names no model, sparing the
	// CLI's model router its extra API round trip; "" leaves the choice to
	// the CLI.
	DefaultModel string

	ApprovalMode          string // "" leaves the CLI's headless default
	Sandbox               bool
	SkipTrust             bool
	IncludeDirectories    []string
	Extensions            []string
	AllowedMCPServerNames []string

	Timeout        time.Duration // per call; 0 means none
	KillGrace      time.Duration // from interrupt to kill; 0 means backend.DefaultKillGrace
	MaxOutputBytes int           // stdout cap; 0 means config.DefaultMaxOutputBytes
}

// Defaults for Options fields left zero.
const (
	stderrKeep = 64 << 10 // stderr tail kept for parsing
	stderrShow = 4 << 10  // stderr tail shown in errors
)

// StdinPromptMax is the largest prompt the Gemini CLI reads: it cuts its
// stdin at 8 MiB (0.61.0, readStdin's MAX_STDIN_SIZE) with only a warning
// on stderr, so a larger prompt is refused rather than sent cut.
const StdinPromptMax = 8 << 20

// Runner is the one-shot backend: it runs one CLI process per turn. It is
// safe for concurrent use. It does not limit how many turns run at once:
// backend.Limit does, around whichever backend serves.
type Runner struct {
	opts Options
	log  *slog.Logger
	// resolved caches the last successful Resolve: a PATH search per call
	// costs more than the one stat that checks the cached path.
	resolved atomic.Pointer[Command]
	// sessionIDFlag caches whether the CLI accepts --session-id:
	// 0 not yet known, 1 yes, 2 no.
	sessionIDFlag atomic.Int32
}

// NewRunner returns a Runner with opts, logging to log.
func NewRunner(opts Options, log *slog.Logger) *Runner {
	if opts.KillGrace <= 0 {
		opts.KillGrace = backend.DefaultKillGrace
	}
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = config.DefaultMaxOutputBytes
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runner{opts: opts, log: log}
}

// Name is the backend's name as --backend spells it.
func (r *Runner) Name() string { return string(config.BackendOneshot) }

// Family is the Gemini CLI's, whose session files it shares with the
// warm backend.
func (r *Runner) Family() config.Family { return config.FamilyCLI }

// Close does nothing: every process of a turn ends with the turn.
func (r *Runner) Close() {}

// errOutputLimit is the cause of an OutputTooBigError.
var errOutputLimit = errors.New("output limit")

// Command finds the CLI, reusing the last answer while its file exists.
func (r *Runner) Command() (Command, error) {
	if c := r.resolved.Load(); c != nil {
		if _, err := os.Stat(c.Path); err == nil {
			return *c, nil
		}
	}
	c, err := Resolve(r.opts.Gemini)
	if err != nil {
		r.resolved.Store(nil)
		return Command{}, err
	}
	r.resolved.Store(&c)
	return c, nil
}

// Run runs the turn as one CLI process. A failure is always an
// *backend.Error.
func (r *Runner) Run(ctx context.Context, t backend.Turn) (*backend.Answer, error) {
	if err := t.Refuse(string(config.BackendOneshot)); err != nil {
		return nil, err
	}
	cmd, err := r.Command()
	if err != nil {
		return nil, err
	}
	a, err := r.runOneShot(ctx, cmd, t)
	if err != nil {
		return nil, err
	}
	a.NotApplied = NotApplied(t)
	return a, nil
}

// NotApplied names the tuning of t that the Gemini CLI cannot apply: it
// has no per-call temperature or thinking budget (0.61.0), so a turn that
// asks for them is answered without, and says so.
func NotApplied(t backend.Turn) []string {
	var n []string
	if t.Temperature != nil {
		n = append(n, "temperature: the Gemini CLI takes no per-call temperature")
	}
	if t.ThinkingMode != "" {
		n = append(n, "thinking_mode: the Gemini CLI takes no per-call thinking budget")
	}
	return n
}

// runOneShot runs the call as one `gemini ... --output-format json` process.
func (r *Runner) runOneShot(ctx context.Context, cmd Command, c backend.Turn) (*backend.Answer, error) {
	if len(c.Prompt) > StdinPromptMax {
		return nil, &backend.Error{Kind: backend.KindInput, Reason: fmt.Sprintf("the prompt with its files is %d bytes, and the Gemini CLI reads at most %d (8 MiB): "+
			"send fewer or smaller files, or a shorter prompt", len(c.Prompt), StdinPromptMax)}
	}
	env := ChildEnv(r.opts.Env)
	if c.Model == "" {
		c.Model = r.opts.DefaultModel
	}
	if c.SystemPrompt != "" {
		// The system prompt lives in a private directory for exactly the
		// length of this call; RemoveAll runs on every way out, panics
		// included.
		dir, err := os.MkdirTemp("", "gemini-mcp-")
		if err != nil {
			return nil, StartError("cannot create a temporary directory for the system prompt: "+err.Error(), err)
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "SYSTEM.md")
		if err := os.WriteFile(path, []byte(c.SystemPrompt), 0o600); err != nil {
			return nil, StartError("cannot write the system prompt file: "+err.Error(), err)
		}
		env = proc.SetEnv(env, "GEMINI_SYSTEM_MD", path)
	}

	preselect := ""
	if c.Session == "" && r.sessionIDFlag.Load() != 2 {
		preselect = session.NewUUID()
	}
	res := r.exec(ctx, cmd, r.args(c, preselect), c.Dir, env, c.Prompt)
	if preselect != "" && res.Exit == 1 && strings.Contains(res.Stderr, "Unknown argument") && strings.Contains(res.Stderr, "session-id") {
		// An older CLI without --session-id: remember, and let it pick.
		r.sessionIDFlag.Store(2)
		r.log.Info("gemini does not accept --session-id; taking session ids from its output instead")
		preselect = ""
		res = r.exec(ctx, cmd, r.args(c, ""), c.Dir, env, c.Prompt)
	}
	out, err := r.interpret(res, c)
	if err != nil {
		return nil, err
	}
	if preselect != "" {
		r.sessionIDFlag.CompareAndSwap(0, 1)
	}
	result := &backend.Answer{Text: *out.Response, Usage: out.Usage(), SessionID: strings.ToLower(out.SessionID), Via: "json"}
	defer stoppedEarly(result, out.Warnings)
	switch {
	case result.SessionID != "":
		if preselect != "" && result.SessionID != preselect {
			r.log.Warn("gemini reported a different session id than the one it was given", "given", preselect, "reported", result.SessionID)
		}
	case preselect != "":
		result.SessionID, result.Via = preselect, "preselected"
	case session.IsUUID(c.Session):
		result.SessionID, result.Via = strings.ToLower(c.Session), "resumed"
	default:
		id, err := r.newestSession(ctx, cmd, c.Dir, env)
		if err != nil {
			r.log.Warn("could not learn the session id", "dir", c.Dir, "err", err)
		} else {
			result.SessionID, result.Via = id, "list-sessions"
		}
	}
	return result, nil
}

// args builds the CLI's argument list. Values that could start with '-'
// are passed as one `--flag=value` string. The prompt is not among them:
// it goes on stdin (see exec), since any local user can read a process's
// argv in /proc/PID/cmdline, and the prompt carries the caller's text and
// files.
func (r *Runner) args(c backend.Turn, sessionID string) []string {
	var a []string
	if c.Model != "" {
		a = append(a, "-m", c.Model)
	}
	switch {
	case c.Session != "":
		a = append(a, "-r", c.Session)
	case sessionID != "":
		a = append(a, "--session-id", sessionID)
	}
	a = append(a, "--output-format", "json")
	a = append(a, r.opts.OperatorArgs()...)
	return a
}

// OperatorArgs are the operator's flags, passed to every CLI process, the
// warm ones included.
func (o Options) OperatorArgs() []string {
	var a []string
	if o.ApprovalMode != "" {
		a = append(a, "--approval-mode="+o.ApprovalMode)
	}
	if o.Sandbox {
		a = append(a, "--sandbox")
	}
	if o.SkipTrust {
		a = append(a, "--skip-trust")
	}
	for _, d := range o.IncludeDirectories {
		a = append(a, "--include-directories="+d)
	}
	for _, e := range o.Extensions {
		a = append(a, "--extensions="+e)
	}
	for _, n := range o.AllowedMCPServerNames {
		a = append(a, "--allowed-mcp-server-names="+n)
	}
	return a
}

// execResult is what one run of the CLI left behind: proc.Run's result,
// and its error told apart.
type execResult struct {
	proc.Result
	startErr error // the CLI could not be started
	ctxErr   error // the caller's context ended the run
}

// exec runs the CLI once and waits for it and everything it started. The
// prompt goes on stdin, which the CLI reads to its end as the prompt when
// stdin is not a terminal; without a prompt stdin is /dev/null, since an
// open pipe that never closes costs the CLI a wait.
func (r *Runner) exec(ctx context.Context, c Command, args []string, dir string, env []string, prompt string) execResult {
	spec := proc.Spec{Path: c.Path, Args: append(append([]string{}, c.Args...), args...), Dir: dir, Env: env,
		MaxStdout: r.opts.MaxOutputBytes, StderrTail: stderrKeep, Timeout: r.opts.Timeout, KillGrace: r.opts.KillGrace}
	if prompt != "" {
		spec.Stdin = strings.NewReader(prompt)
	}
	r.log.Debug("starting gemini", "path", c.Path, "args", args, "dir", dir, "promptBytes", len(prompt), "promptOnStdin", spec.Stdin != nil)
	res, err := proc.Run(ctx, spec)
	out := execResult{Result: res}
	var se *proc.StartError
	switch {
	case errors.As(err, &se):
		out.startErr = se.Err
	case err != nil:
		out.ctxErr = err
	}
	r.log.Debug("gemini finished", "exit", res.Exit, "elapsed", res.Elapsed, "stdoutBytes", len(res.Stdout))
	return out
}

// interpret turns a finished process into the CLI's output object or an
// *backend.Error.
func (r *Runner) interpret(res execResult, c backend.Turn) (Output, error) {
	tail := strings.TrimSpace(proc.LastBytes(res.Stderr, stderrShow))
	switch {
	case res.startErr != nil:
		if errors.Is(res.startErr, proc.ErrNotFound) || errors.Is(res.startErr, os.ErrNotExist) {
			return Output{}, notFoundError(fmt.Sprintf("the gemini CLI could not be started: %v. %s", res.startErr, InstallHelp), res.startErr)
		}
		return Output{}, StartError(fmt.Sprintf("the gemini CLI could not be started in %s: %v", c.Dir, res.startErr), res.startErr)
	case res.Overflow:
		return Output{}, OutputTooBigError(r.opts.MaxOutputBytes).SetRan(tail)
	case res.TimedOut:
		return Output{}, CallTimeoutError(r.opts.Timeout).SetRan(tail)
	case res.ctxErr != nil:
		return Output{}, CancelledError("the call was cancelled before gemini finished, and gemini was stopped", res.ctxErr).SetRan(tail)
	case res.Signal != "":
		return Output{}, killedError(res.Signal).SetRan(tail)
	case res.Exit != 0:
		var errOut *Output
		if o, err := ParseOutput([]byte(res.Stderr)); err == nil {
			errOut = &o
		}
		return Output{}, classify(res.Exit, errOut, tail, c.Session, c.Dir)
	}
	out, err := ParseOutput(res.Stdout)
	if err != nil {
		return Output{}, badOutputError(fmt.Sprintf("gemini exited 0 but did not print the expected JSON (stdout began: %q). "+
			"Check that --gemini points at the Gemini CLI, and update it", msg.Clip(strings.TrimSpace(string(res.Stdout)), 200))).SetRan(tail).SetExited(0)
	}
	if out.Error != nil {
		return Output{}, classify(0, &out, tail, c.Session, c.Dir)
	}
	if out.Response == nil || strings.TrimSpace(*out.Response) == "" {
		return Output{}, EmptyError().SetRan(tail).SetExited(0)
	}
	return out, nil
}

// newestSession asks the CLI for the newest session in dir. It is the
// fallback for a CLI whose JSON output carries no session_id, and it is
// slow: before listing, the CLI asks the model to title the newest
// untitled session.
func (r *Runner) newestSession(ctx context.Context, cmd Command, dir string, env []string) (string, error) {
	res := r.exec(ctx, cmd, []string{"--list-sessions"}, dir, env, "")
	stdout, err := r.interpretPlain(res, "--list-sessions")
	if err != nil {
		return "", err
	}
	list, err := ParseSessionList(string(stdout))
	if err != nil {
		return "", err
	}
	s, ok := Newest(list)
	if !ok {
		return "", errors.New("gemini lists no sessions in this directory")
	}
	return s.ID, nil
}

// ChildEnv is the CLI's environment: the server's own less its GEMINI_MCP_* settings, the configured
// additions (extra), and GEMINI_CLI_NO_RELAUNCH=true unless either sets it. Without
// it the CLI re-spawns itself at every start, only to raise Node's heap
// limit to half the machine's memory (and, in interactive use, to restart
// after a settings change): a second Node start-up, about 1 s per call,
// and a grandchild that ignores SIGINT. A one-shot headless call fits the
// default heap.
func ChildEnv(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		// This server's own settings are of no use to the CLI, and some
		// are secrets (GEMINI_MCP_TOKENS, GEMINI_MCP_AUTH_CLIENT_SECRET,
		// a store URL with a password) that the model's shell tools
		// could read there.
		if !strings.HasPrefix(strings.ToUpper(kv), "GEMINI_MCP_") {
			env = append(env, kv)
		}
	}
	env = append(env, extra...)
	for _, kv := range env {
		if strings.HasPrefix(kv, "GEMINI_CLI_NO_RELAUNCH=") {
			return env
		}
	}
	return append(env, "GEMINI_CLI_NO_RELAUNCH=true")
}

// seconds formats a duration for messages: "300 s", or "1.5 s".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}

// Version runs `gemini --version` and returns what it prints.
func (r *Runner) Version(ctx context.Context) (string, error) {
	cmd, err := Resolve(r.opts.Gemini)
	if err != nil {
		return "", err
	}
	res := r.exec(ctx, cmd, []string{"--version"}, "", ChildEnv(r.opts.Env), "")
	if _, err := r.interpretPlain(res, "--version"); err != nil {
		return "", err
	}
	return strings.TrimSpace(string(res.Stdout)), nil
}

// interpretPlain checks a run of a non-prompt command.
func (r *Runner) interpretPlain(res execResult, what string) ([]byte, error) {
	tail := strings.TrimSpace(proc.LastBytes(res.Stderr, stderrShow))
	switch {
	case res.startErr != nil:
		return nil, StartError(fmt.Sprintf("gemini %s could not be started: %v", what, res.startErr), res.startErr)
	case res.TimedOut:
		return nil, timeoutError(fmt.Sprintf("gemini %s timed out", what)).SetRan(tail)
	case res.ctxErr != nil:
		return nil, CancelledError(fmt.Sprintf("gemini %s was cancelled", what), res.ctxErr).SetRan(tail)
	case res.Signal != "":
		e := killedError(res.Signal).SetRan(tail)
		e.Reason = fmt.Sprintf("gemini %s: %s", what, e.Reason)
		return nil, e
	case res.Exit != 0:
		return nil, FailedError(fmt.Sprintf("gemini %s exited %d: %s", what, res.Exit, cliMessage(nil, tail)), nil).SetRan(tail).SetExited(res.Exit)
	}
	return res.Stdout, nil
}

// Package gemini runs the Gemini CLI: it is the only package that starts
// processes. It builds the command line, runs the CLI headless with
// `--output-format json`, parses what it prints, and turns failures into
// typed errors that say what to do.
package gemini

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/proc"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/queue"
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

	MaxConcurrent  int           // CLI processes at once; 0 means DefaultMaxConcurrent
	Timeout        time.Duration // per call; 0 means none
	KillGrace      time.Duration // from interrupt to kill; 0 means DefaultKillGrace
	MaxOutputBytes int           // stdout cap; 0 means DefaultMaxOutputBytes
	// Warm, when set, serves calls from a pool of long-lived `gemini --acp`
	// processes where it can (see pool.go); the rest run one-shot.
	Warm *WarmOptions
}

// Defaults for Options fields left zero.
const (
	DefaultKillGrace      = 1500 * time.Millisecond
	DefaultMaxConcurrent  = 4
	DefaultMaxOutputBytes = 32 << 20
	stderrKeep            = 64 << 10 // stderr tail kept for parsing
	stderrShow            = 4 << 10  // stderr tail shown in errors
)

// ArgPromptMax is the largest prompt passed in argv; larger ones go on
// stdin. Linux caps one argv string at 128 KiB; Windows caps the whole
// command line at 32,767 UTF-16 units, and quoting can double a prompt.
var ArgPromptMax = func() int {
	if runtime.GOOS == "windows" {
		return 8 << 10
	}
	return 100 << 10
}()

// Call is one prompt to the CLI.
type Call struct {
	Prompt       string
	Model        string // "" for the CLI's default
	SystemPrompt string // "" for the CLI's own system prompt
	Dir          string // absolute working directory, already checked
	Resume       string // "" starts a new session; else latest, an index or a UUID
	Observer     Observer
}

// Observer hears what a call is doing, for progress reports. Its methods
// are called from the goroutine running the call.
type Observer interface {
	// Queued says the call waits for a free process slot, with ahead calls
	// before it; it is called again as the line moves.
	Queued(ahead int)
	// Started says the CLI is running.
	Started()
}

// Result is a successful call.
type Result struct {
	SessionID string // "" only when no way of learning it worked
	Response  string
	Output    Output
	// SessionIDSource says how the id was learned: "json", "preselected",
	// "resumed" or "list-sessions".
	SessionIDSource string
}

// Runner runs CLI calls. It is safe for concurrent use.
type Runner struct {
	opts  Options
	log   *slog.Logger
	slots *queue.Sem
	pool  *pool // nil unless Options.Warm
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
		opts.KillGrace = DefaultKillGrace
	}
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = DefaultMaxConcurrent
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Runner{opts: opts, log: log, slots: queue.NewSem(opts.MaxConcurrent)}
	if opts.Warm != nil {
		r.pool = newPool(r, *opts.Warm)
	}
	return r
}

// Close stops the warm processes, if any, and waits for them.
func (r *Runner) Close() {
	if r.pool != nil {
		r.pool.close()
	}
}

var (
	errTimeout     = errors.New("timeout")
	errOutputLimit = errors.New("output limit")
)

// command finds the CLI, reusing the last answer while its file exists.
func (r *Runner) command() (Command, error) {
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

// Run makes one call. A failure is always an *Error.
func (r *Runner) Run(ctx context.Context, c Call) (*Result, error) {
	cmd, err := r.command()
	if err != nil {
		return nil, err
	}
	// A call holds its slot from the first process it starts to the last,
	// so that at most MaxConcurrent CLI processes run at once.
	var queued func(int)
	if c.Observer != nil {
		queued = c.Observer.Queued
	}
	release, err := r.slots.Acquire(ctx, queued)
	if err != nil {
		return nil, cancelledError("the call was cancelled while waiting for a free gemini slot (--max-concurrent)", err)
	}
	defer release()
	if c.Observer != nil {
		c.Observer.Started()
	}
	if r.pool != nil {
		wctx := ctx
		if r.opts.Timeout > 0 {
			var cancel context.CancelFunc
			wctx, cancel = context.WithTimeout(ctx, r.opts.Timeout)
			defer cancel()
		}
		res, err := r.pool.run(wctx, cmd, c)
		if !errors.Is(err, errNotWarm) {
			return res, err
		}
	}
	res, err := r.runOneShot(ctx, cmd, c)
	if err == nil && r.pool != nil {
		// The turn went to disk without the warm process that may hold the
		// session: that process must never serve it again.
		r.pool.release(res.SessionID)
	}
	return res, err
}

// runOneShot runs the call as one `gemini ... --output-format json` process.
func (r *Runner) runOneShot(ctx context.Context, cmd Command, c Call) (*Result, error) {
	env := r.childEnv()
	if c.Model == "" {
		c.Model = r.opts.DefaultModel
	}
	if c.SystemPrompt != "" {
		// The system prompt lives in a private directory for exactly the
		// length of this call; RemoveAll runs on every way out, panics
		// included.
		dir, err := os.MkdirTemp("", "gemini-mcp-")
		if err != nil {
			return nil, startError("cannot create a temporary directory for the system prompt: "+err.Error(), err)
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "SYSTEM.md")
		if err := os.WriteFile(path, []byte(c.SystemPrompt), 0o600); err != nil {
			return nil, startError("cannot write the system prompt file: "+err.Error(), err)
		}
		env = proc.SetEnv(env, "GEMINI_SYSTEM_MD", path)
	}

	preselect := ""
	if c.Resume == "" && r.sessionIDFlag.Load() != 2 {
		preselect = session.NewUUID()
	}
	res := r.exec(ctx, cmd, r.args(c, preselect), c.Dir, env, c.Prompt)
	if preselect != "" && res.exit == 1 && strings.Contains(res.stderr, "Unknown argument") && strings.Contains(res.stderr, "session-id") {
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
	result := &Result{Response: *out.Response, Output: out, SessionID: strings.ToLower(out.SessionID), SessionIDSource: "json"}
	switch {
	case result.SessionID != "":
		if preselect != "" && result.SessionID != preselect {
			r.log.Warn("gemini reported a different session id than the one it was given", "given", preselect, "reported", result.SessionID)
		}
	case preselect != "":
		result.SessionID, result.SessionIDSource = preselect, "preselected"
	case session.IsUUID(c.Resume):
		result.SessionID, result.SessionIDSource = strings.ToLower(c.Resume), "resumed"
	default:
		id, err := r.newestSession(ctx, cmd, c.Dir, env)
		if err != nil {
			r.log.Warn("could not learn the session id", "dir", c.Dir, "err", err)
		} else {
			result.SessionID, result.SessionIDSource = id, "list-sessions"
		}
	}
	return result, nil
}

// args builds the CLI's argument list. Values that could start with '-'
// are passed as one `--flag=value` string; the prompt is always
// `--prompt=TEXT` (or stdin), never a positional argument, which the CLI
// would read as a flag when it starts with '-', or as a subcommand when it
// is a word such as "mcp".
func (r *Runner) args(c Call, sessionID string) []string {
	var a []string
	if c.Model != "" {
		a = append(a, "-m", c.Model)
	}
	switch {
	case c.Resume != "":
		a = append(a, "-r", c.Resume)
	case sessionID != "":
		a = append(a, "--session-id", sessionID)
	}
	a = append(a, "--output-format", "json")
	a = append(a, r.operatorArgs()...)
	if len(c.Prompt) <= ArgPromptMax {
		a = append(a, "--prompt="+c.Prompt)
	}
	return a
}

// operatorArgs are the operator's flags, passed to every CLI process.
func (r *Runner) operatorArgs() []string {
	var a []string
	if r.opts.ApprovalMode != "" {
		a = append(a, "--approval-mode="+r.opts.ApprovalMode)
	}
	if r.opts.Sandbox {
		a = append(a, "--sandbox")
	}
	if r.opts.SkipTrust {
		a = append(a, "--skip-trust")
	}
	for _, d := range r.opts.IncludeDirectories {
		a = append(a, "--include-directories="+d)
	}
	for _, e := range r.opts.Extensions {
		a = append(a, "--extensions="+e)
	}
	for _, n := range r.opts.AllowedMCPServerNames {
		a = append(a, "--allowed-mcp-server-names="+n)
	}
	return a
}

// execResult is what one process left behind.
type execResult struct {
	stdout    []byte
	stderr    string
	exit      int
	signal    string // the signal that ended the process ("SIGKILL"), or ""
	startErr  error
	timedOut  bool
	overflow  bool
	cancelled bool
	ctxErr    error // the caller's context error, when cancelled
	elapsed   time.Duration
}

// exec runs the CLI once and waits for it and everything it started. The
// prompt goes on stdin when it is too large for argv; otherwise stdin is
// /dev/null, since an open pipe that never closes costs the CLI a wait.
func (r *Runner) exec(ctx context.Context, c Command, args []string, dir string, env []string, prompt string) execResult {
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if r.opts.Timeout > 0 {
		var stop context.CancelFunc
		runCtx, stop = context.WithTimeoutCause(runCtx, r.opts.Timeout, errTimeout)
		defer stop()
	}
	stdout := proc.NewCappedBuffer(r.opts.MaxOutputBytes, func() { cancel(errOutputLimit) })
	stderr := proc.NewTailBuffer(stderrKeep)

	cmd := exec.CommandContext(runCtx, c.Path, append(append([]string{}, c.Args...), args...)...)
	cmd.Dir = dir
	cmd.Env = env
	if len(prompt) > ArgPromptMax {
		cmd.Stdin = strings.NewReader(prompt)
	}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	proc.SetGroup(cmd)
	cmd.Cancel = func() error { return proc.InterruptGroup(cmd.Process) }
	cmd.WaitDelay = r.opts.KillGrace

	r.log.Debug("starting gemini", "path", c.Path, "args", redactPrompt(args), "dir", dir, "promptBytes", len(prompt), "promptOnStdin", cmd.Stdin != nil)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return execResult{startErr: err, exit: -1}
	}
	waitErr := cmd.Wait()
	// The CLI re-spawns itself; whatever of its process group outlived it
	// goes now.
	_ = proc.KillGroup(cmd.Process)
	res := execResult{stdout: stdout.Bytes(), stderr: stderr.String(), elapsed: time.Since(start), exit: cmd.ProcessState.ExitCode(), signal: proc.ExitSignal(cmd.ProcessState)}
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) && !errors.Is(waitErr, exec.ErrWaitDelay) {
		r.log.Debug("waiting for gemini", "err", waitErr)
	}
	switch cause := context.Cause(runCtx); {
	case stdout.Overflowed() || errors.Is(cause, errOutputLimit):
		res.overflow = true
	case errors.Is(cause, errTimeout):
		res.timedOut = true
	case ctx.Err() != nil:
		res.cancelled, res.ctxErr = true, ctx.Err()
	}
	r.log.Debug("gemini finished", "exit", res.exit, "elapsed", res.elapsed, "stdoutBytes", len(res.stdout))
	return res
}

// interpret turns a finished process into the CLI's output object or an
// *Error.
func (r *Runner) interpret(res execResult, c Call) (Output, error) {
	tail := strings.TrimSpace(proc.LastBytes(res.stderr, stderrShow))
	switch {
	case res.startErr != nil:
		if errors.Is(res.startErr, exec.ErrNotFound) || errors.Is(res.startErr, os.ErrNotExist) {
			return Output{}, notFoundError(fmt.Sprintf("the gemini CLI could not be started: %v. %s", res.startErr, InstallHelp), res.startErr)
		}
		return Output{}, startError(fmt.Sprintf("the gemini CLI could not be started in %s: %v", c.Dir, res.startErr), res.startErr)
	case res.overflow:
		return Output{}, outputTooBigError(r.opts.MaxOutputBytes).SetRan(tail)
	case res.timedOut:
		return Output{}, callTimeoutError(r.opts.Timeout).SetRan(tail)
	case res.cancelled:
		return Output{}, cancelledError("the call was cancelled before gemini finished, and gemini was stopped", res.ctxErr).SetRan(tail)
	case res.signal != "":
		return Output{}, killedError(res.signal).SetRan(tail)
	case res.exit != 0:
		var errOut *Output
		if o, err := ParseOutput([]byte(res.stderr)); err == nil {
			errOut = &o
		}
		return Output{}, classify(res.exit, errOut, tail, c.Resume, c.Dir)
	}
	out, err := ParseOutput(res.stdout)
	if err != nil {
		return Output{}, badOutputError(fmt.Sprintf("gemini exited 0 but did not print the expected JSON (stdout began: %q). "+
			"Check that --gemini points at the Gemini CLI, and update it", clip(strings.TrimSpace(string(res.stdout)), 200))).SetRan(tail).SetExited(0)
	}
	if out.Error != nil {
		return Output{}, classify(0, &out, tail, c.Resume, c.Dir)
	}
	if out.Response == nil || strings.TrimSpace(*out.Response) == "" {
		return Output{}, emptyError().SetRan(tail).SetExited(0)
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

// childEnv is the CLI's environment: the server's own, the configured
// additions, and GEMINI_CLI_NO_RELAUNCH=true unless either sets it. Without
// it the CLI re-spawns itself at every start, only to raise Node's heap
// limit to half the machine's memory (and, in interactive use, to restart
// after a settings change): a second Node start-up, about 1 s per call,
// and a grandchild that ignores SIGINT. A one-shot headless call fits the
// default heap.
func (r *Runner) childEnv() []string {
	env := append(os.Environ(), r.opts.Env...)
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

// redactPrompt replaces the prompt in an argument list with its length,
// for logs.
func redactPrompt(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.HasPrefix(a, "--prompt=") {
			a = fmt.Sprintf("--prompt=<%d bytes>", len(a)-len("--prompt="))
		}
		out[i] = a
	}
	return out
}

// Version runs `gemini --version` and returns what it prints.
func (r *Runner) Version(ctx context.Context) (string, error) {
	cmd, err := Resolve(r.opts.Gemini)
	if err != nil {
		return "", err
	}
	res := r.exec(ctx, cmd, []string{"--version"}, "", r.childEnv(), "")
	if _, err := r.interpretPlain(res, "--version"); err != nil {
		return "", err
	}
	return strings.TrimSpace(string(res.stdout)), nil
}

// interpretPlain checks a run of a non-prompt command.
func (r *Runner) interpretPlain(res execResult, what string) ([]byte, error) {
	tail := strings.TrimSpace(proc.LastBytes(res.stderr, stderrShow))
	switch {
	case res.startErr != nil:
		return nil, startError(fmt.Sprintf("gemini %s could not be started: %v", what, res.startErr), res.startErr)
	case res.timedOut:
		return nil, timeoutError(fmt.Sprintf("gemini %s timed out", what)).SetRan(tail)
	case res.cancelled:
		return nil, cancelledError(fmt.Sprintf("gemini %s was cancelled", what), res.ctxErr).SetRan(tail)
	case res.signal != "":
		e := killedError(res.signal).SetRan(tail)
		e.Reason = fmt.Sprintf("gemini %s: %s", what, e.Reason)
		return nil, e
	case res.exit != 0:
		return nil, failedError(fmt.Sprintf("gemini %s exited %d: %s", what, res.exit, cliMessage(nil, tail)), nil).SetRan(tail).SetExited(res.exit)
	}
	return res.stdout, nil
}

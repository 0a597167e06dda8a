// Package cli is the one-shot backend: it runs the Gemini CLI headless,
// one process per turn, with `--output-format json`. It builds the command
// line, parses what the CLI prints, and turns failures into typed errors
// that say what to do, with what package geminicli knows of the CLI, as
// the warm backend (package acp) does.
package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/proc"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// How much of the CLI's stderr is kept.
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
	opts     geminicli.Options
	log      *slog.Logger
	resolver *geminicli.Resolver
	// sessionIDFlag caches whether the CLI accepts --session-id:
	// 0 not yet known, 1 yes, 2 no.
	sessionIDFlag atomic.Int32
}

// NewRunner returns a Runner with opts, logging to log.
func NewRunner(opts geminicli.Options, log *slog.Logger) *Runner {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runner{opts: opts.WithDefaults(), log: log, resolver: geminicli.NewResolver(opts.Gemini)}
}

// Name is the backend's name as --backend spells it.
func (r *Runner) Name() string { return string(config.BackendOneshot) }

// Family is the Gemini CLI's, whose session files it shares with the
// warm backend.
func (r *Runner) Family() config.Family { return config.FamilyCLI }

// Close does nothing: every process of a turn ends with the turn.
func (r *Runner) Close() {}

// Run runs the turn as one CLI process. A failure is always an
// *backend.Error.
func (r *Runner) Run(ctx context.Context, t backend.Turn) (*backend.Answer, error) {
	if err := t.Refuse(string(config.BackendOneshot)); err != nil {
		return nil, err
	}
	cmd, err := r.resolver.Command()
	if err != nil {
		return nil, err
	}
	a, err := r.runOneShot(ctx, cmd, t)
	if err != nil {
		return nil, err
	}
	a.NotApplied = geminicli.NotApplied(t)
	return a, nil
}

// runOneShot runs the call as one `gemini ... --output-format json` process.
func (r *Runner) runOneShot(ctx context.Context, cmd geminicli.Command, c backend.Turn) (*backend.Answer, error) {
	if len(c.Prompt) > StdinPromptMax {
		return nil, &backend.Error{Kind: backend.KindInput, Reason: fmt.Sprintf("the prompt with its files is %d bytes, and the Gemini CLI reads at most %d (8 MiB): "+
			"send fewer or smaller files, or a shorter prompt", len(c.Prompt), StdinPromptMax)}
	}
	env := geminicli.ChildEnv(r.opts.Env)
	if c.Model == "" {
		c.Model = r.opts.DefaultModel
	}
	if c.SystemPrompt != "" {
		// The system prompt lives in a private directory for exactly the
		// length of this call; RemoveAll runs on every way out, panics
		// included.
		dir, withPrompt, err := geminicli.SystemPromptFile(env, c.SystemPrompt)
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		env = withPrompt
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
func (r *Runner) exec(ctx context.Context, c geminicli.Command, args []string, dir string, env []string, prompt string) execResult {
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
func (r *Runner) interpret(res execResult, c backend.Turn) (geminicli.Output, error) {
	tail := strings.TrimSpace(proc.LastBytes(res.Stderr, stderrShow))
	switch {
	case res.startErr != nil:
		if errors.Is(res.startErr, proc.ErrNotFound) || errors.Is(res.startErr, os.ErrNotExist) {
			return geminicli.Output{}, geminicli.NotFoundError(fmt.Sprintf("the gemini CLI could not be started: %v. %s", res.startErr, geminicli.InstallHelp), res.startErr)
		}
		return geminicli.Output{}, geminicli.StartError(fmt.Sprintf("the gemini CLI could not be started in %s: %v", c.Dir, res.startErr), res.startErr)
	case res.Overflow:
		return geminicli.Output{}, geminicli.OutputTooBigError(r.opts.MaxOutputBytes).SetRan(tail)
	case res.TimedOut:
		return geminicli.Output{}, geminicli.CallTimeoutError(r.opts.Timeout).SetRan(tail)
	case res.ctxErr != nil:
		return geminicli.Output{}, geminicli.CancelledError("the call was cancelled before gemini finished, and gemini was stopped", res.ctxErr).SetRan(tail)
	case res.Signal != "":
		return geminicli.Output{}, geminicli.KilledError(res.Signal).SetRan(tail)
	case res.Exit != 0:
		var errOut *geminicli.Output
		if o, err := geminicli.ParseOutput([]byte(res.Stderr)); err == nil {
			errOut = &o
		}
		return geminicli.Output{}, geminicli.Classify(res.Exit, errOut, tail, c.Session, c.Dir)
	}
	out, err := geminicli.ParseOutput(res.Stdout)
	if err != nil {
		return geminicli.Output{}, geminicli.BadOutputError(fmt.Sprintf("gemini exited 0 but did not print the expected JSON (stdout began: %q). "+
			"Check that --gemini points at the Gemini CLI, and update it", msg.Clip(strings.TrimSpace(string(res.Stdout)), 200))).SetRan(tail).SetExited(0)
	}
	if out.Error != nil {
		return geminicli.Output{}, geminicli.Classify(0, &out, tail, c.Session, c.Dir)
	}
	if out.Response == nil || strings.TrimSpace(*out.Response) == "" {
		return geminicli.Output{}, geminicli.EmptyError().SetRan(tail).SetExited(0)
	}
	return out, nil
}

// newestSession asks the CLI for the newest session in dir. It is the
// fallback for a CLI whose JSON output carries no session_id, and it is
// slow: before listing, the CLI asks the model to title the newest
// untitled session.
func (r *Runner) newestSession(ctx context.Context, cmd geminicli.Command, dir string, env []string) (string, error) {
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

// Version runs `gemini --version` and returns what it prints.
func (r *Runner) Version(ctx context.Context) (string, error) {
	cmd, err := geminicli.Resolve(r.opts.Gemini)
	if err != nil {
		return "", err
	}
	res := r.exec(ctx, cmd, []string{"--version"}, "", geminicli.ChildEnv(r.opts.Env), "")
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
		return nil, geminicli.StartError(fmt.Sprintf("gemini %s could not be started: %v", what, res.startErr), res.startErr)
	case res.TimedOut:
		return nil, geminicli.TimeoutError(fmt.Sprintf("gemini %s timed out", what)).SetRan(tail)
	case res.ctxErr != nil:
		return nil, geminicli.CancelledError(fmt.Sprintf("gemini %s was cancelled", what), res.ctxErr).SetRan(tail)
	case res.Signal != "":
		e := geminicli.KilledError(res.Signal).SetRan(tail)
		e.Reason = fmt.Sprintf("gemini %s: %s", what, e.Reason)
		return nil, e
	case res.Exit != 0:
		return nil, geminicli.FailedError(fmt.Sprintf("gemini %s exited %d: %s", what, res.Exit, failureMessage(tail)), nil).SetRan(tail).SetExited(res.Exit)
	}
	return res.Stdout, nil
}

// failureMessage is the most telling line of a failed command's stderr.
func failureMessage(stderr string) string {
	m, _ := geminicli.FailureMessage(nil, stderr)
	return m
}

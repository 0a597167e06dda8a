// Package gitchanges reads the pending changes of a git repository, for
// the precommit tool: what is staged, what is not, and the new files git
// does not track yet, as unified diffs.
//
// It runs the user's git executable (found on PATH, or Options.Git)
// through internal/proc, with a timeout, reading only: GIT_OPTIONAL_LOCKS=0
// keeps git from refreshing the index.
//
// A repository is data from outside, and git runs programs its
// configuration names; none of them runs here (see env.go for how each
// is turned off). The repository is located without git (locate.go): the
// .git file or link, the common directory, the index, the object
// directory and its alternates are resolved, and with Options.Root set
// any of them, or the work tree, outside the root is refused before git
// runs; git is then told each of them explicitly, so that it finds
// nothing on its own.
//
// Binary files are named in the diff ("Binary files … differ"), never
// dumped. New untracked files (those .gitignore does not exclude) are
// rendered as additions: regular files only, a symbolic link as its target
// (never followed), files with NUL bytes in their first 8 KiB as binary.
// The diff text is capped at Options.MaxBytes (git's output is read up
// to 1 MiB past it, then git is stopped); past it Changes.Truncated is
// set. The list of files holds at most Options.MaxFiles; Changes.Omitted
// counts the rest, and untracked files past the diff's budget are not
// read.
//
// The diff is returned as git wrote it, secrets and all: the secrets
// package (internal/filectx/secrets) finds them (ScanDiff) and masks them
// (RedactDiff) with the same line scanner that masks the files sent, and
// internal/filectx's Service (Changes) applies both before precommit sends
// the diff.
//
// Errors are *Error with a Kind: KindGitMissing (git cannot be found or
// started), KindNotRepo (the path is not inside a git work tree),
// KindOutside (part of the repository lies outside Options.Root),
// KindOwner (another user owns it, and Options.AnyOwner is not set),
// KindTimeout and KindFailed.
package gitchanges

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/pathx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/proc"
)

// Defaults of Options.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultMaxBytes       = 4 << 20
	DefaultMaxNewFileSize = 1 << 20
	DefaultMaxFiles       = 500
)

// Options say which changes to read and how.
type Options struct {
	Staged   bool // the index against HEAD
	Unstaged bool // the work tree against the index, and untracked files
	// Git is the git executable; "" means "git" on PATH.
	Git string
	// Timeout bounds each git command (DefaultTimeout when zero).
	Timeout time.Duration
	// MaxBytes caps the diff text of both parts together.
	MaxBytes int
	// MaxNewFileSize caps what is shown of one untracked file.
	MaxNewFileSize int64
	// MaxFiles caps Changes.Files (DefaultMaxFiles when zero).
	MaxFiles int
	// Root, when set, is the directory every part of the repository must
	// lie in (symbolic links resolved): its work tree, git directory,
	// common directory, index, object directory and alternates.
	Root string
	// AnyOwner reads a repository another user owns too. Git itself
	// refuses one ("dubious ownership") unless safe.directory names it,
	// but skips that check when told where the repository is, as Collect
	// tells it: without AnyOwner, Collect refuses it (KindOwner).
	AnyOwner bool
}

// Kind classifies an *Error.
type Kind string

// The kinds of failure.
const (
	KindGitMissing Kind = "git-missing"
	KindNotRepo    Kind = "not-a-repository"
	KindTimeout    Kind = "timeout"
	KindFailed     Kind = "failed"
	KindOutside    Kind = "outside-root"
	KindOwner      Kind = "not-owned"
)

// Error is a failure to read the changes; Message says what to do.
type Error struct {
	Kind    Kind
	Message string
	Err     error
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }

type runner struct {
	git  string
	dir  string
	opts Options
	env  []string
}

// setup reads the repository's configuration, with git told where the
// repository is (loc) and that its work tree is loc.top, so that git
// goes nowhere else; then settles the work tree (core.worktree, which
// must lie inside the root too) and the environment of the commands
// that read the changes. It returns the work tree.
func (r *runner) setup(ctx context.Context, loc *location, dir string) (string, error) {
	r.dir = loc.top
	r.env = gitEnv(loc, loc.top, nil)
	cfg, err := r.config(ctx)
	if err != nil {
		return "", err
	}
	top := loc.top
	if wt := cfg.worktree; wt != "" {
		if top, err = resolveFrom(loc.gitDir, wt); err != nil {
			return "", &Error{Kind: KindNotRepo, Err: err, Message: fmt.Sprintf("the work tree %s that the git repository of %s names (core.worktree) cannot be resolved: %v", wt, dir, err)}
		}
		if r.opts.Root != "" {
			root, _ := filepath.EvalSymlinks(r.opts.Root)
			if !pathx.Within(root, top) {
				return "", &Error{Kind: KindOutside, Message: fmt.Sprintf("the git repository that holds %s has its work tree (%s, its core.worktree) outside the project root: give a repository that lies wholly inside the project root", dir, top)}
			}
		}
		if st, err := os.Stat(top); err != nil || !st.IsDir() {
			return "", &Error{Kind: KindNotRepo, Err: err, Message: fmt.Sprintf("the work tree %s that the git repository of %s names (core.worktree) is not a directory", top, dir)}
		}
		if !r.opts.AnyOwner {
			if err := checkOwners(dir, [][2]string{{"work tree (core.worktree)", top}}); err != nil {
				return "", err
			}
		}
	}
	r.dir = top
	r.env = gitEnv(loc, top, cfg.filters)
	return top, nil
}

// Collect reads the changes of the repository that holds dir.
func Collect(ctx context.Context, dir string, opts Options) (*Changes, error) {
	if !opts.Staged && !opts.Unstaged {
		return nil, &Error{Kind: KindFailed, Message: "neither staged nor unstaged changes were asked for: set include_staged or include_unstaged"}
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if opts.MaxNewFileSize <= 0 {
		opts.MaxNewFileSize = DefaultMaxNewFileSize
	}
	if opts.MaxFiles <= 0 {
		opts.MaxFiles = DefaultMaxFiles
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, &Error{Kind: KindNotRepo, Err: err, Message: fmt.Sprintf("%s is not an existing directory: give the path of a git work tree", dir)}
	}
	git := opts.Git
	if git == "" {
		git = "git"
	}
	path, err := proc.LookPath(git)
	if err != nil {
		return nil, &Error{Kind: KindGitMissing, Err: err, Message: fmt.Sprintf("git cannot be found (%v): install git and put it on PATH", err)}
	}
	loc, err := locate(dir, opts.Root, opts.AnyOwner)
	if err != nil {
		return nil, err
	}
	r := &runner{git: path, opts: opts}
	top, err := r.setup(ctx, loc, dir)
	if err != nil {
		return nil, err
	}
	c := &Changes{Root: top, maxFiles: opts.MaxFiles}
	budget := opts.MaxBytes
	if opts.Staged {
		files, err := r.files(ctx, true, c)
		if err != nil {
			return nil, err
		}
		if files > 0 {
			d, err := r.diff(ctx, c, "diff", "--cached", "--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty", "-M")
			if err != nil {
				return nil, err
			}
			c.Staged = c.take(d, &budget)
		}
	}
	if opts.Unstaged {
		files, err := r.files(ctx, false, c)
		if err != nil {
			return nil, err
		}
		var b strings.Builder
		if files > 0 {
			d, err := r.diff(ctx, c, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty")
			if err != nil {
				return nil, err
			}
			b.WriteString(c.take(d, &budget))
		}
		untracked, err := r.untracked(ctx, c)
		if err != nil {
			return nil, err
		}
		for _, u := range untracked {
			if budget == 0 {
				// Past the budget nothing more is shown: the file is
				// listed (or counted) unread.
				c.Truncated = true
				c.add(File{Path: u, Status: "untracked"})
				continue
			}
			text, binary := r.newFile(top, u)
			c.add(File{Path: u, Status: "untracked", Binary: binary})
			b.WriteString(c.take(text, &budget))
		}
		c.Unstaged = b.String()
	}
	return c, nil
}

// diff runs a diff command; output past what is read counts as cut.
func (r *runner) diff(ctx context.Context, c *Changes, args ...string) (string, error) {
	out, overflow, err := r.run(ctx, args...)
	if overflow {
		c.Truncated = true
	}
	return string(out), err
}

// run runs one git command in the repository and returns its stdout;
// overflow says that git wrote more than is read, and was stopped.
func (r *runner) run(ctx context.Context, args ...string) (out []byte, overflow bool, err error) {
	full := append([]string{"--no-pager"}, args...)
	res, err := proc.Run(ctx, proc.Spec{Path: r.git, Args: full, Dir: r.dir, Env: r.env, Timeout: r.opts.Timeout, MaxStdout: r.opts.MaxBytes + 1<<20})
	name := "git " + args[0]
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, false, err
	case err != nil:
		return nil, false, &Error{Kind: KindGitMissing, Err: err, Message: fmt.Sprintf("git (%s) could not be started: %v; check that git is installed and runnable", r.git, err)}
	case res.TimedOut:
		return nil, false, &Error{Kind: KindTimeout, Err: proc.ErrTimeout, Message: fmt.Sprintf("%s in %s did not finish within %s: the repository may be very large or locked; try again, or review fewer changes", name, r.dir, r.opts.Timeout)}
	case res.Overflow:
		// Not an error: what was read is cut to MaxBytes anyway.
		return res.Stdout, true, nil
	case res.Exit != 0 && strings.Contains(res.Stderr, "not a git repository"):
		return nil, false, &Error{Kind: KindNotRepo, Message: fmt.Sprintf("%s is not inside a git repository: give the path of a git work tree (the directory holding .git, or one below it)", r.dir)}
	case res.Exit != 0:
		tail := strings.TrimSpace(proc.LastBytes(res.Stderr, 600))
		return nil, false, &Error{Kind: KindFailed, Message: fmt.Sprintf("%s failed in %s (exit %d): %s", name, r.dir, res.Exit, msg.Clip(tail, 600))}
	}
	return res.Stdout, false, nil
}

// IsNotRepo reports whether err says the path is not in a git repository.
func IsNotRepo(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == KindNotRepo
}

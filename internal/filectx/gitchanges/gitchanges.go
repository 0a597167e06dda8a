// Package gitchanges reads the pending changes of a git repository, for
// the precommit tool: what is staged, what is not, and the new files git
// does not track yet, as unified diffs.
//
// It runs the user's git executable (found on PATH, or Options.Git)
// through internal/proc, with a timeout, reading only: GIT_OPTIONAL_LOCKS=0
// keeps git from refreshing the index, and external diff drivers and
// textconv filters are turned off, so that no program the repository
// names runs. Binary files are named in the diff ("Binary files … differ"),
// never dumped. New untracked files (those .gitignore does not exclude) are
// rendered as additions: regular files only, a symbolic link as its target
// (never followed), files with NUL bytes in their first 8 KiB as binary.
// The diff text is capped at Options.MaxBytes; past it Changes.Truncated
// is set.
//
// Errors are *Error with a Kind: KindGitMissing (git cannot be found or
// started), KindNotRepo (the path is not inside a git work tree),
// KindTimeout and KindFailed.
package gitchanges

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/proc"
)

// Defaults of Options.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultMaxBytes       = 4 << 20
	DefaultMaxNewFileSize = 1 << 20
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
}

// Kind classifies an *Error.
type Kind string

// The kinds of failure.
const (
	KindGitMissing Kind = "git-missing"
	KindNotRepo    Kind = "not-a-repository"
	KindTimeout    Kind = "timeout"
	KindFailed     Kind = "failed"
)

// Error is a failure to read the changes; Message says what to do.
type Error struct {
	Kind    Kind
	Message string
	Err     error
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }

// File is one changed path.
type File struct {
	Path   string `json:"path"`             // relative to the repository's top level, slash-separated
	From   string `json:"from,omitempty"`   // the old path of a rename or copy
	Status string `json:"status"`           // added, modified, deleted, renamed, copied, type-changed, untracked
	Staged bool   `json:"staged"`           // a staged change (false: unstaged or untracked)
	Binary bool   `json:"binary,omitempty"` // named, not shown
}

// Changes are a repository's pending changes.
type Changes struct {
	Root      string // the repository's top level
	Staged    string // the staged diff ("" when not asked or none)
	Unstaged  string // the unstaged diff, then the untracked files as additions
	Files     []File
	Truncated bool // the diff text reached Options.MaxBytes
}

// Empty reports whether there is nothing to review.
func (c *Changes) Empty() bool { return len(c.Files) == 0 }

// Diff returns the diff text with a heading per part.
func (c *Changes) Diff() string {
	var b strings.Builder
	if c.Staged != "" {
		b.WriteString("## Staged changes\n\n")
		b.WriteString(c.Staged)
	}
	if c.Unstaged != "" {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("## Unstaged changes\n\n")
		b.WriteString(c.Unstaged)
	}
	if c.Truncated {
		b.WriteString("\n[the diff was cut here: it is larger than the limit]\n")
	}
	return b.String()
}

type runner struct {
	git  string
	dir  string
	opts Options
	env  []string
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
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, &Error{Kind: KindNotRepo, Err: err, Message: fmt.Sprintf("%s is not an existing directory: give the path of a git work tree", dir)}
	}
	git := opts.Git
	if git == "" {
		git = "git"
	}
	path, err := exec.LookPath(git)
	if err != nil {
		return nil, &Error{Kind: KindGitMissing, Err: err, Message: fmt.Sprintf("git cannot be found (%v): install git and put it on PATH", err)}
	}
	env := proc.SetEnv(os.Environ(), "GIT_OPTIONAL_LOCKS", "0")
	env = proc.SetEnv(env, "GIT_TERMINAL_PROMPT", "0")
	env = proc.SetEnv(env, "LC_ALL", "C")
	r := &runner{git: path, dir: dir, opts: opts, env: env}

	top, err := r.run(ctx, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, err
	}
	c := &Changes{Root: strings.TrimSpace(string(top))}
	r.dir = c.Root
	budget := opts.MaxBytes
	if opts.Staged {
		files, err := r.files(ctx, true)
		if err != nil {
			return nil, err
		}
		c.Files = append(c.Files, files...)
		if len(files) > 0 {
			d, err := r.run(ctx, "diff", "--cached", "--no-color", "--no-ext-diff", "--no-textconv", "-M")
			if err != nil {
				return nil, err
			}
			c.Staged = c.take(string(d), &budget)
		}
	}
	if opts.Unstaged {
		files, err := r.files(ctx, false)
		if err != nil {
			return nil, err
		}
		c.Files = append(c.Files, files...)
		var b strings.Builder
		if len(files) > 0 {
			d, err := r.run(ctx, "diff", "--no-color", "--no-ext-diff", "--no-textconv")
			if err != nil {
				return nil, err
			}
			b.WriteString(c.take(string(d), &budget))
		}
		untracked, err := r.untracked(ctx)
		if err != nil {
			return nil, err
		}
		for _, u := range untracked {
			text, binary := r.newFile(u)
			c.Files = append(c.Files, File{Path: u, Status: "untracked", Binary: binary})
			b.WriteString(c.take(text, &budget))
		}
		c.Unstaged = b.String()
	}
	return c, nil
}

// take returns as much of s as the budget allows, at a line boundary.
func (c *Changes) take(s string, budget *int) string {
	if len(s) <= *budget {
		*budget -= len(s)
		return s
	}
	c.Truncated = true
	cut := s[:*budget]
	if i := strings.LastIndexByte(cut, '\n'); i >= 0 {
		cut = cut[:i+1]
	} else {
		cut = ""
	}
	*budget = 0
	return cut
}

// run runs one git command in the repository and returns its stdout.
func (r *runner) run(ctx context.Context, args ...string) ([]byte, error) {
	full := append([]string{"-c", "core.quotepath=false", "-c", "core.fsmonitor=false", "-c", "diff.noprefix=false"}, args...)
	res, err := proc.Run(ctx, proc.Spec{Path: r.git, Args: full, Dir: r.dir, Env: r.env, Timeout: r.opts.Timeout, MaxStdout: r.opts.MaxBytes + 1<<20})
	name := "git " + args[0]
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, err
	case err != nil:
		return nil, &Error{Kind: KindGitMissing, Err: err, Message: fmt.Sprintf("git (%s) could not be started: %v; check that git is installed and runnable", r.git, err)}
	case res.TimedOut:
		return nil, &Error{Kind: KindTimeout, Err: proc.ErrTimeout, Message: fmt.Sprintf("%s in %s did not finish within %s: the repository may be very large or locked; try again, or review fewer changes", name, r.dir, r.opts.Timeout)}
	case res.Exit != 0 && strings.Contains(res.Stderr, "not a git repository"):
		return nil, &Error{Kind: KindNotRepo, Message: fmt.Sprintf("%s is not inside a git repository: give the path of a git work tree (the directory holding .git, or one below it)", r.dir)}
	case res.Exit != 0:
		tail := strings.TrimSpace(proc.LastBytes(res.Stderr, 600))
		return nil, &Error{Kind: KindFailed, Message: fmt.Sprintf("%s failed in %s (exit %d): %s", name, r.dir, res.Exit, msg.Clip(tail, 600))}
	}
	// Overflow is not an error: the diff is cut to MaxBytes anyway.
	return res.Stdout, nil
}

var statusNames = map[byte]string{'A': "added", 'M': "modified", 'D': "deleted", 'R': "renamed", 'C': "copied", 'T': "type-changed", 'U': "unmerged"}

// files lists the staged (or unstaged) changes with --name-status, and
// marks binaries with --numstat, which shows "-" for their line counts.
func (r *runner) files(ctx context.Context, staged bool) ([]File, error) {
	base := []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "-z"}
	if staged {
		base = append(base, "--cached", "-M")
	}
	ns, err := r.run(ctx, append(append([]string{}, base...), "--name-status")...)
	if err != nil {
		return nil, err
	}
	num, err := r.run(ctx, append(append([]string{}, base...), "--numstat")...)
	if err != nil {
		return nil, err
	}
	binary := binaryPaths(num)
	var out []File
	fields := strings.Split(strings.TrimSuffix(string(ns), "\x00"), "\x00")
	for i := 0; i < len(fields); i++ {
		st := fields[i]
		if st == "" {
			continue
		}
		f := File{Status: statusNames[st[0]], Staged: staged}
		if f.Status == "" {
			f.Status = st
		}
		if (st[0] == 'R' || st[0] == 'C') && i+2 < len(fields) {
			f.From, f.Path = fields[i+1], fields[i+2]
			i += 2
		} else if i+1 < len(fields) {
			f.Path = fields[i+1]
			i++
		}
		f.Binary = binary[f.Path]
		out = append(out, f)
	}
	return out, nil
}

// binaryPaths reads "--numstat -z" output: "added\tdeleted\tpath\0", or
// "added\tdeleted\t\0from\0to\0" for a rename; binaries count "-".
func binaryPaths(num []byte) map[string]bool {
	m := map[string]bool{}
	fields := strings.Split(strings.TrimSuffix(string(num), "\x00"), "\x00")
	for i := 0; i < len(fields); i++ {
		parts := strings.SplitN(fields[i], "\t", 3)
		if len(parts) != 3 {
			continue
		}
		path := parts[2]
		if path == "" && i+2 < len(fields) {
			path = fields[i+2]
			i += 2
		}
		if parts[0] == "-" && parts[1] == "-" {
			m[path] = true
		}
	}
	return m
}

func (r *runner) untracked(ctx context.Context) ([]string, error) {
	out, err := r.run(ctx, "ls-files", "--others", "--exclude-standard", "-z")
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, p := range strings.Split(string(out), "\x00") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// newFile renders an untracked file as a diff that adds it, and says
// whether it is binary.
func (r *runner) newFile(rel string) (string, bool) {
	abs := filepath.Join(r.dir, filepath.FromSlash(rel))
	a, bname := diffName("a/", rel), diffName("b/", rel)
	header := fmt.Sprintf("diff --git %s %s\nnew file (untracked)\n", a, bname)
	info, err := os.Lstat(abs)
	if err != nil {
		return header + fmt.Sprintf("[cannot be read: %v]\n", err), false
	}
	if info.Mode()&os.ModeSymlink != 0 {
		target, _ := os.Readlink(abs)
		return header + fmt.Sprintf("--- /dev/null\n+++ %s\n@@ -0,0 +1 @@\n+%s\n\\ No newline at end of file (symbolic link)\n", bname, msg.QuoteName(target)), false
	}
	if !info.Mode().IsRegular() {
		return header + "[not a regular file]\n", false
	}
	f, err := os.Open(abs)
	if err != nil {
		return header + fmt.Sprintf("[cannot be read: %v]\n", err), false
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, r.opts.MaxNewFileSize+1))
	if err != nil {
		return header + fmt.Sprintf("[cannot be read: %v]\n", err), false
	}
	head := data
	if len(head) > 8<<10 {
		head = head[:8<<10]
	}
	if bytes.IndexByte(head, 0) >= 0 {
		return header + fmt.Sprintf("Binary files /dev/null and %s differ\n", bname), true
	}
	cut := int64(len(data)) > r.opts.MaxNewFileSize
	if cut {
		data = data[:r.opts.MaxNewFileSize]
		if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
			data = data[:i+1]
		}
	}
	text := strings.ToValidUTF8(string(data), "\uFFFD")
	noEOL := text != "" && !strings.HasSuffix(text, "\n")
	text = strings.TrimSuffix(text, "\n")
	var lines []string
	if len(data) > 0 {
		lines = strings.Split(text, "\n")
	}
	var b strings.Builder
	b.WriteString(header)
	if len(lines) == 0 {
		return b.String(), false
	}
	fmt.Fprintf(&b, "--- /dev/null\n+++ %s\n@@ -0,0 +1,%d @@\n", bname, len(lines))
	for _, l := range lines {
		b.WriteString("+")
		b.WriteString(l)
		b.WriteString("\n")
	}
	if noEOL {
		b.WriteString("\\ No newline at end of file\n")
	}
	if cut {
		fmt.Fprintf(&b, "[the rest of %s is not shown: it is larger than %d bytes]\n", msg.QuoteName(rel), r.opts.MaxNewFileSize)
	}
	return b.String(), false
}

// diffName is an untracked file's name in its diff header: prefix and
// rel, quoted as git quotes the names of tracked files when rel holds
// what could end the line (msg.QuoteName), so that a name cannot forge a
// header.
func diffName(prefix, rel string) string {
	if msg.QuoteName(rel) == rel {
		return prefix + rel
	}
	return strconv.Quote(prefix + rel)
}

// IsNotRepo reports whether err says the path is not in a git repository.
func IsNotRepo(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == KindNotRepo
}

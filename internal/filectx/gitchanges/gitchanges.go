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
// internal/expertctx applies both before precommit sends the diff.
//
// Errors are *Error with a Kind: KindGitMissing (git cannot be found or
// started), KindNotRepo (the path is not inside a git work tree),
// KindOutside (part of the repository lies outside Options.Root),
// KindTimeout and KindFailed.
package gitchanges

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
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
	Files     []File // at most Options.MaxFiles
	Omitted   int    // the changed files past Options.MaxFiles, not in Files
	Truncated bool   // the diff text reached Options.MaxBytes

	maxFiles int
}

// add lists f, or counts it past the cap.
func (c *Changes) add(f File) {
	if len(c.Files) >= c.maxFiles {
		c.Omitted++
		return
	}
	c.Files = append(c.Files, f)
}

// Empty reports whether there is nothing to review.
func (c *Changes) Empty() bool { return len(c.Files) == 0 && c.Omitted == 0 }

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
	if c.Omitted > 0 {
		fmt.Fprintf(&b, "\n[%d more changed files are not shown: more than %d files changed]\n", c.Omitted, c.maxFiles)
	}
	return b.String()
}

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
	loc, err := locate(dir, opts.Root)
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

// nulList splits git's -z output; when it was cut (overflow), the last,
// partial entry is dropped.
func nulList(out []byte, overflow bool) []string {
	s := string(out)
	if overflow {
		if i := strings.LastIndexByte(s, 0); i >= 0 {
			s = s[:i+1]
		} else {
			s = ""
		}
	}
	return strings.Split(strings.TrimSuffix(s, "\x00"), "\x00")
}

var statusNames = map[byte]string{'A': "added", 'M': "modified", 'D': "deleted", 'R': "renamed", 'C': "copied", 'T': "type-changed", 'U': "unmerged"}

// files adds the staged (or unstaged) changes to c with --name-status,
// marking binaries with --numstat, which shows "-" for their line
// counts, and returns how many there are.
func (r *runner) files(ctx context.Context, staged bool, c *Changes) (int, error) {
	base := []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "--ignore-submodules=dirty", "-z"}
	if staged {
		base = append(base, "--cached", "-M")
	}
	ns, cut, err := r.run(ctx, append(append([]string{}, base...), "--name-status")...)
	if err != nil {
		return 0, err
	}
	num, cutNum, err := r.run(ctx, append(append([]string{}, base...), "--numstat")...)
	if err != nil {
		return 0, err
	}
	if cut || cutNum {
		c.Truncated = true
	}
	binary := binaryPaths(nulList(num, cutNum))
	n := 0
	fields := nulList(ns, cut)
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
		c.add(f)
		n++
	}
	return n, nil
}

// binaryPaths reads "--numstat -z" output: "added\tdeleted\tpath\0", or
// "added\tdeleted\t\0from\0to\0" for a rename; binaries count "-".
func binaryPaths(fields []string) map[string]bool {
	m := map[string]bool{}
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

func (r *runner) untracked(ctx context.Context, c *Changes) ([]string, error) {
	out, cut, err := r.run(ctx, "ls-files", "--others", "--exclude-standard", "-z")
	if err != nil {
		return nil, err
	}
	if cut {
		c.Truncated = true
	}
	var paths []string
	for _, p := range nulList(out, cut) {
		if p != "" {
			paths = append(paths, p)
		}
	}
	return paths, nil
}

// newFile renders an untracked file as a diff that adds it, and says
// whether it is binary.
func (r *runner) newFile(top, rel string) (string, bool) {
	abs := filepath.Join(top, filepath.FromSlash(rel))
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
	f, err := openRegular(abs)
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

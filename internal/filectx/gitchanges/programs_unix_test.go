//go:build unix

package gitchanges

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// marker writes a shell script that appends a line to a marker file and
// fails, and returns the script's path and the marker's.
func marker(t *testing.T) (script, mark string) {
	t.Helper()
	dir := t.TempDir()
	mark = filepath.Join(dir, "ran")
	script = filepath.Join(dir, "evil.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$0 $*\" >> '"+mark+"'\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return script, mark
}

// touchDirty rewrites a committed file with other content of the same
// size and a later modification time, so that git must read it (through
// its clean filter) to tell whether it changed.
func touchDirty(t *testing.T, dir, rel string) {
	t.Helper()
	full := filepath.Join(dir, rel)
	old, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	now := []byte(strings.ToUpper(string(old)))
	if err := os.WriteFile(full, now, 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(full, later, later); err != nil {
		t.Fatal(err)
	}
}

func gitConfig(t *testing.T, dir string, kv ...string) {
	t.Helper()
	for i := 0; i+1 < len(kv); i += 2 {
		git(t, dir, "config", kv[i], kv[i+1])
	}
}

// partialClone makes dir a partial clone from the promisor remote url
// whose staged blob is missing, so that a staged diff must fetch it.
func partialClone(t *testing.T, dir, url string, kv ...string) {
	t.Helper()
	writeFiles(t, dir, map[string]string{"lazy.txt": "missing blob\n"})
	git(t, dir, "add", "lazy.txt")
	out, err := exec.Command("git", "-C", dir, "rev-parse", ":lazy.txt").Output()
	if err != nil {
		t.Fatal(err)
	}
	blob := strings.TrimSpace(string(out))
	if err := os.Remove(filepath.Join(dir, ".git", "objects", blob[:2], blob[2:])); err != nil {
		t.Fatal(err)
	}
	gitConfig(t, dir, "core.repositoryformatversion", "1", "extensions.partialClone", "origin", "remote.origin.promisor", "true", "remote.origin.url", url)
	gitConfig(t, dir, kv...)
}

// TestNoProgramTheRepositoryNamesRuns plants, for each git mechanism
// that runs a program, a marker-writing script in a repository; shows
// that plain git, running the command Collect runs without its
// neutralisation, does run it (so the mechanism is live on this git);
// then shows that Collect does not.
func TestNoProgramTheRepositoryNamesRuns(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	// An HTTP server that asks for credentials, for the credential
	// helper and askPass.
	auth := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Basic realm="x"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	defer auth.Close()
	unstaged := []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv"}
	staged := []string{"diff", "--cached", "--no-color", "--no-ext-diff", "--no-textconv"}
	cases := []struct {
		name  string
		setup func(t *testing.T, dir, script string) // may set environment variables with t.Setenv
		plain []string                               // the git command that runs the script
	}{
		{"clean filter in .git/config, by .gitattributes", func(t *testing.T, dir, script string) {
			gitConfig(t, dir, "filter.evil.clean", script)
			writeFiles(t, dir, map[string]string{".gitattributes": "*.txt filter=evil\n"})
			touchDirty(t, dir, "a.txt")
		}, unstaged},
		{"process filter in .git/config, by .git/info/attributes", func(t *testing.T, dir, script string) {
			gitConfig(t, dir, "filter.Evil-Proc.process", script, "filter.Evil-Proc.required", "true")
			writeFiles(t, dir, map[string]string{".git/info/attributes": "a.txt filter=Evil-Proc\n"})
			touchDirty(t, dir, "a.txt")
		}, []string{"diff", "--no-color", "--no-ext-diff", "--no-textconv", "-z", "--name-status"}},
		{"clean filter brought in by include.path", func(t *testing.T, dir, script string) {
			writeFiles(t, dir, map[string]string{"extra.cfg": "[filter \"inc\"]\n\tclean = " + script + "\n", ".gitattributes": "*.txt filter=inc\n"})
			gitConfig(t, dir, "include.path", "../extra.cfg")
			touchDirty(t, dir, "a.txt")
		}, unstaged},
		{"clean filter brought in by includeIf", func(t *testing.T, dir, script string) {
			writeFiles(t, dir, map[string]string{"extra.cfg": "[filter \"incif\"]\n\tclean = " + script + "\n", ".gitattributes": "*.txt filter=incif\n"})
			gitConfig(t, dir, "includeIf.gitdir:"+dir+"/.git.path", "../extra.cfg")
			touchDirty(t, dir, "a.txt")
		}, unstaged},
		{"clean filter in a submodule's .git/modules/*/config", func(t *testing.T, dir, script string) {
			sub := repo(t, map[string]string{".gitattributes": "*.txt filter=subevil\n", "b.txt": "sub\n"})
			git(t, dir, "-c", "protocol.file.allow=always", "submodule", "-q", "add", sub, "sub")
			git(t, dir, "commit", "-q", "-m", "sub")
			git(t, filepath.Join(dir, "sub"), "config", "filter.subevil.clean", script)
			touchDirty(t, dir, "sub/b.txt")
		}, unstaged},
		{"core.fsmonitor", func(t *testing.T, dir, script string) {
			gitConfig(t, dir, "core.fsmonitor", script)
			writeFiles(t, dir, map[string]string{"a.txt": "two\n"})
			git(t, dir, "add", "a.txt")
		}, staged},
		{"diff.<driver>.command", func(t *testing.T, dir, script string) {
			gitConfig(t, dir, "diff.evil.command", script)
			writeFiles(t, dir, map[string]string{".git/info/attributes": "*.txt diff=evil\n", "a.txt": "two\n"})
		}, []string{"diff", "--no-color"}},
		{"diff.<driver>.textconv", func(t *testing.T, dir, script string) {
			gitConfig(t, dir, "diff.evil.textconv", script)
			writeFiles(t, dir, map[string]string{".git/info/attributes": "*.txt diff=evil\n", "a.txt": "two\n"})
		}, []string{"diff", "--no-color"}},
		{"diff.external", func(t *testing.T, dir, script string) {
			gitConfig(t, dir, "diff.external", script)
			writeFiles(t, dir, map[string]string{"a.txt": "two\n"})
		}, []string{"diff", "--no-color"}},
		{"GIT_EXTERNAL_DIFF inherited", func(t *testing.T, dir, script string) {
			t.Setenv("GIT_EXTERNAL_DIFF", script)
			writeFiles(t, dir, map[string]string{"a.txt": "two\n"})
		}, []string{"diff", "--no-color"}},
		{"GIT_CONFIG_COUNT inherited", func(t *testing.T, dir, script string) {
			t.Setenv("GIT_CONFIG_COUNT", "1")
			t.Setenv("GIT_CONFIG_KEY_0", "core.fsmonitor")
			t.Setenv("GIT_CONFIG_VALUE_0", script)
			writeFiles(t, dir, map[string]string{"a.txt": "two\n"})
		}, unstaged},
		{"global config inherited", func(t *testing.T, dir, script string) {
			global := filepath.Join(t.TempDir(), "gitconfig")
			if err := os.WriteFile(global, []byte("[core]\n\tfsmonitor = "+script+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Setenv("GIT_CONFIG_GLOBAL", global)
			writeFiles(t, dir, map[string]string{"a.txt": "two\n"})
		}, unstaged},
		{"lazy fetch through an ext:: remote", func(t *testing.T, dir, script string) {
			partialClone(t, dir, "ext::sh -c "+script+"% >&2", "protocol.ext.allow", "always")
		}, staged},
		{"lazy fetch with remote.*.uploadpack", func(t *testing.T, dir, script string) {
			partialClone(t, dir, repo(t, map[string]string{"x": "x\n"}), "remote.origin.uploadpack", script, "protocol.file.allow", "always")
		}, staged},
		{"lazy fetch with core.sshCommand", func(t *testing.T, dir, script string) {
			partialClone(t, dir, "ssh://git.invalid/x", "core.sshCommand", script)
		}, staged},
		{"lazy fetch with core.gitProxy", func(t *testing.T, dir, script string) {
			partialClone(t, dir, "git://git.invalid/x", "core.gitProxy", script)
		}, staged},
		{"lazy fetch with credential.helper", func(t *testing.T, dir, script string) {
			partialClone(t, dir, auth.URL+"/x", "credential.helper", "!"+script)
		}, staged},
		{"lazy fetch with core.askPass", func(t *testing.T, dir, script string) {
			partialClone(t, dir, auth.URL+"/x", "core.askPass", script)
		}, staged},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := repo(t, map[string]string{"a.txt": "one\n"})
			script, mark := marker(t)
			tc.setup(t, dir, script)

			// Plain git, as it ran before: GIT_OPTIONAL_LOCKS=0 and the
			// server's environment, nothing else.
			cmd := exec.Command("git", tc.plain...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0", "GIT_TERMINAL_PROMPT=0")
			out, _ := cmd.CombinedOutput()
			if _, err := os.Stat(mark); err != nil {
				t.Fatalf("plain git %v did not run the script, so this case proves nothing (%v)\n%s", tc.plain, err, out)
			}
			if err := os.Remove(mark); err != nil {
				t.Fatal(err)
			}

			c, err := Collect(t.Context(), dir, Options{Staged: true, Unstaged: true, Root: dir})
			if ran, rerr := os.ReadFile(mark); rerr == nil {
				t.Fatalf("Collect ran the repository's program: %s(Collect: %v)", ran, err)
			}
			// A file under a blanked filter is compared as it is on disk.
			if strings.Contains(tc.name, "filter") && !strings.Contains(tc.name, "submodule") && (err != nil || !strings.Contains(c.Unstaged, "+ONE")) {
				t.Errorf("the change under the filter is not shown: %v", err)
			}
		})
	}
}

// spyGit writes a git that logs each call (its directory, GIT_DIR,
// GIT_WORK_TREE and arguments) before running the real git.
func spyGit(t *testing.T) (path, log string) {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	dir := t.TempDir()
	log = filepath.Join(dir, "calls")
	path = filepath.Join(dir, "git")
	script := fmt.Sprintf("#!/bin/sh\necho \"$PWD|$GIT_DIR|$GIT_WORK_TREE|$*\" >> '%s'\nexec '%s' \"$@\"\n", log, real)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, log
}

// TestRepositoryOutsideTheRootIsRefusedBeforeGitRuns points a work tree
// inside the root at git data outside it, each way git allows; Collect
// refuses each before any git command reads it.
func TestRepositoryOutsideTheRootIsRefusedBeforeGitRuns(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, root, outside string) string // returns the directory to collect
	}{
		{".git file naming a git directory outside", func(t *testing.T, root, outside string) string {
			writeFiles(t, root, map[string]string{"proj/.git": "gitdir: " + filepath.Join(outside, ".git") + "\n"})
			return filepath.Join(root, "proj")
		}},
		{".git symbolic link to a git directory outside", func(t *testing.T, root, outside string) string {
			mkdir(t, filepath.Join(root, "proj"))
			symlink(t, filepath.Join(outside, ".git"), filepath.Join(root, "proj", ".git"))
			return filepath.Join(root, "proj")
		}},
		{"commondir outside", func(t *testing.T, root, outside string) string {
			writeFiles(t, root, map[string]string{"proj/.git": "gitdir: ../wt\n", "wt/HEAD": "ref: refs/heads/main\n", "wt/commondir": filepath.Join(outside, ".git") + "\n"})
			return filepath.Join(root, "proj")
		}},
		{"core.worktree outside", func(t *testing.T, root, outside string) string {
			r := filepath.Join(root, "proj")
			mkdir(t, r)
			git(t, r, "init", "-q")
			git(t, r, "config", "core.worktree", outside)
			return r
		}},
		{"index a symbolic link outside", func(t *testing.T, root, outside string) string {
			r := filepath.Join(root, "proj")
			mkdir(t, r)
			git(t, r, "init", "-q")
			symlink(t, filepath.Join(outside, ".git", "index"), filepath.Join(r, ".git", "index"))
			return r
		}},
		{"objects a symbolic link outside", func(t *testing.T, root, outside string) string {
			r := filepath.Join(root, "proj")
			mkdir(t, r)
			git(t, r, "init", "-q")
			if err := os.RemoveAll(filepath.Join(r, ".git", "objects")); err != nil {
				t.Fatal(err)
			}
			symlink(t, filepath.Join(outside, ".git", "objects"), filepath.Join(r, ".git", "objects"))
			return r
		}},
		{"alternates outside", func(t *testing.T, root, outside string) string {
			r := filepath.Join(root, "proj")
			mkdir(t, r)
			git(t, r, "init", "-q")
			writeFiles(t, r, map[string]string{".git/objects/info/alternates": filepath.Join(outside, ".git", "objects") + "\n"})
			return r
		}},
		{"repository above the root", func(t *testing.T, root, outside string) string {
			sub := filepath.Join(outside, "below")
			mkdir(t, sub)
			return sub
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			outside := repo(t, map[string]string{"victim.txt": "committed\n"})
			writeFiles(t, outside, map[string]string{"victim.txt": "OUTSIDE-STAGED\n", "untracked-outside.txt": "OUTSIDE-UNTRACKED\n"})
			git(t, outside, "add", "victim.txt")
			root, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			dir := tc.setup(t, root, outside)
			boundary := root
			if tc.name == "repository above the root" {
				boundary = dir
			}
			spy, log := spyGit(t)
			c, err := Collect(t.Context(), dir, Options{Staged: true, Unstaged: true, Root: boundary, Git: spy})
			calls, _ := os.ReadFile(log)
			if err == nil || !strings.Contains(err.Error(), "outside the project root") {
				diff := ""
				if c != nil {
					diff = c.Diff()
				}
				t.Fatalf("not refused: %v\n%s\ngit calls:\n%s", err, diff, calls)
			}
			var e *Error
			if !errors.As(err, &e) || e.Kind != KindOutside {
				t.Fatalf("kind: %v", err)
			}
			for _, l := range strings.Split(strings.TrimSpace(string(calls)), "\n") {
				if l == "" {
					continue
				}
				f := strings.SplitN(l, "|", 4)
				if strings.Contains(f[0]+f[1]+f[2], outside) || !strings.HasPrefix(strings.TrimPrefix(f[3], "--no-pager "), "config ") {
					t.Errorf("git ran before the refusal: %s", l)
				}
			}
		})
	}
}

func mkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestRepositoryShapesInsideTheRoot reads the changes of a linked work
// tree, a submodule (a .git file, its git directory under the
// superproject's, its core.worktree) and a work tree whose .git is a
// link, all inside the root.
func TestRepositoryShapesInsideTheRoot(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	main := filepath.Join(root, "main")
	mkdir(t, main)
	git(t, main, "init", "-q")
	writeFiles(t, main, map[string]string{"a.txt": "one\n"})
	git(t, main, "add", "a.txt")
	git(t, main, "commit", "-q", "-m", "one")

	linked := filepath.Join(root, "linked")
	git(t, main, "worktree", "add", "-q", linked)
	writeFiles(t, linked, map[string]string{"a.txt": "linked change\n"})
	git(t, linked, "add", "a.txt")

	lib := repo(t, map[string]string{"lib.txt": "lib\n"})
	git(t, main, "-c", "protocol.file.allow=always", "submodule", "-q", "add", lib, "sub")
	git(t, main, "commit", "-q", "-m", "sub")
	writeFiles(t, main, map[string]string{"sub/lib.txt": "submodule change\n"})
	git(t, filepath.Join(main, "sub"), "add", "lib.txt")

	viaLink := filepath.Join(root, "via-link")
	mkdir(t, viaLink)
	mkdir(t, filepath.Join(root, "stash"))
	git(t, viaLink, "init", "-q", "--separate-git-dir", filepath.Join(root, "stash", "repo.git"))
	if err := os.Remove(filepath.Join(viaLink, ".git")); err != nil {
		t.Fatal(err)
	}
	symlink(t, filepath.Join(root, "stash", "repo.git"), filepath.Join(viaLink, ".git"))
	writeFiles(t, viaLink, map[string]string{"c.txt": "through a link\n"})
	git(t, viaLink, "add", "c.txt")

	for _, tc := range []struct{ dir, top, want string }{
		{linked, linked, "+linked change"},
		{filepath.Join(main, "sub"), filepath.Join(main, "sub"), "+submodule change"},
		{viaLink, viaLink, "+through a link"},
	} {
		c, err := Collect(t.Context(), tc.dir, Options{Staged: true, Unstaged: true, Root: root})
		if err != nil {
			t.Fatalf("%s: %v", tc.dir, err)
		}
		if c.Root != tc.top || !strings.Contains(c.Staged, tc.want) {
			t.Errorf("%s: root %s, staged:\n%s", tc.dir, c.Root, c.Staged)
		}
	}
}

// TestPointerFilesThatAreFIFOs: a .git, commondir or alternates file
// that is a FIFO is refused at once; opening it plainly would wait for
// a writer for ever.
func TestPointerFilesThatAreFIFOs(t *testing.T) {
	for _, rel := range []string{".git", ".git/commondir", ".git/objects/info/alternates"} {
		dir := repo(t, map[string]string{"a.txt": "a\n"})
		full := filepath.Join(dir, rel)
		if err := os.RemoveAll(full); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(full, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Collect(t.Context(), dir, Options{Staged: true, Unstaged: true, Root: dir})
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindNotRepo || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s a FIFO: %v", rel, err)
		}
	}
}

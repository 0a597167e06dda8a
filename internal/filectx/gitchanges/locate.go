package gitchanges

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/pathx"
)

// location is where a repository's parts are, every path resolved
// (no symbolic link left in it). Collect hands them to git explicitly
// (GIT_DIR, GIT_WORK_TREE, GIT_COMMON_DIR, GIT_INDEX_FILE,
// GIT_OBJECT_DIRECTORY), so that git reads nothing it finds on its own.
type location struct {
	top       string // the directory holding .git
	gitDir    string
	commonDir string // gitDir, or the main repository's of a linked work tree
	index     string
	objects   string
}

// maxPointerFile caps what is read of a .git file, a commondir file and
// objects/info/alternates.
const maxPointerFile = 64 << 10

// maxAlternateDepth is git's own limit on alternates of alternates.
const maxAlternateDepth = 5

// locate finds the repository that holds dir the way git discovers it
// (the nearest .git above dir, stopping below GIT_CEILING_DIRECTORIES),
// without running git, and refuses it with KindOutside when root is set
// and any part git would read lies outside root: the work tree, the git
// directory (a .git file or link may point anywhere), its common
// directory, the index, the object directory and its alternates. Unless
// anyOwner, it refuses with KindOwner a repository whose work tree, git
// directory or common directory another user owns, as git does (see
// checkOwners).
func locate(dir, root string, anyOwner bool) (*location, error) {
	start, err := filepath.Abs(dir)
	if err == nil {
		start, err = filepath.EvalSymlinks(start)
	}
	if err != nil {
		return nil, &Error{Kind: KindNotRepo, Err: err, Message: fmt.Sprintf("%s cannot be resolved (%v): give the path of a git work tree", dir, err)}
	}
	if root != "" {
		if root, err = filepath.EvalSymlinks(root); err != nil {
			return nil, &Error{Kind: KindFailed, Err: err, Message: fmt.Sprintf("the project root %s cannot be resolved: %v", root, err)}
		}
	}
	outside := func(what, p string) error {
		return &Error{Kind: KindOutside, Message: fmt.Sprintf("the git repository that holds %s has its %s (%s) outside the project root: give a repository that lies wholly inside the project root", dir, what, p)}
	}
	ceilings := ceilingDirs()
	top := ""
	for d := start; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			top = d
			break
		}
		parent := filepath.Dir(d)
		if parent == d || ceilings[parent] {
			break
		}
		d = parent
	}
	if top == "" {
		return nil, &Error{Kind: KindNotRepo, Message: fmt.Sprintf("%s is not inside a git repository: give the path of a git work tree (the directory holding .git, or one below it)", dir)}
	}
	if root != "" && !pathx.Within(root, top) {
		return nil, outside("top level", top)
	}
	loc := &location{top: top}
	if loc.gitDir, err = gitDirOf(top); err != nil {
		return nil, err
	}
	if root != "" && !pathx.Within(root, loc.gitDir) {
		return nil, outside("git directory", loc.gitDir)
	}
	if pathx.Within(loc.gitDir, start) {
		return nil, &Error{Kind: KindNotRepo, Message: fmt.Sprintf("%s is inside the git directory %s, not in a work tree: give the path of the work tree", dir, loc.gitDir)}
	}
	loc.commonDir = loc.gitDir
	if text, ok, err := readPointer(filepath.Join(loc.gitDir, "commondir")); err != nil {
		return nil, notGitDir(loc.gitDir, err)
	} else if ok {
		if loc.commonDir, err = resolveFrom(loc.gitDir, strings.TrimSpace(text)); err != nil {
			return nil, notGitDir(loc.gitDir, err)
		}
		if root != "" && !pathx.Within(root, loc.commonDir) {
			return nil, outside("common git directory", loc.commonDir)
		}
	}
	if !anyOwner {
		if err := checkOwners(dir, [][2]string{{"work tree", loc.top}, {"git directory", loc.gitDir}, {"common git directory", loc.commonDir}}); err != nil {
			return nil, err
		}
	}
	if st, err := os.Stat(filepath.Join(loc.gitDir, "HEAD")); err != nil || st.IsDir() {
		return nil, notGitDir(loc.gitDir, errors.New("it has no HEAD"))
	}
	if loc.objects, err = resolveFrom(loc.commonDir, "objects"); err != nil {
		return nil, notGitDir(loc.commonDir, err)
	}
	if root != "" && !pathx.Within(root, loc.objects) {
		return nil, outside("object directory", loc.objects)
	}
	if root != "" {
		if p, err := alternatesOutside(root, loc.objects, 0); err != nil {
			return nil, notGitDir(loc.commonDir, err)
		} else if p != "" {
			return nil, outside("alternate object directory", p)
		}
	}
	loc.index = filepath.Join(loc.gitDir, "index")
	if _, err := os.Lstat(loc.index); err == nil {
		if loc.index, err = filepath.EvalSymlinks(loc.index); err != nil {
			return nil, notGitDir(loc.gitDir, err)
		}
		if root != "" && !pathx.Within(root, loc.index) {
			return nil, outside("index", loc.index)
		}
	}
	return loc, nil
}

func notGitDir(gitDir string, err error) error {
	return &Error{Kind: KindNotRepo, Err: err, Message: fmt.Sprintf("%s is not a usable git directory (%v): give the path of a git work tree", gitDir, err)}
}

// gitDirOf resolves top/.git: a directory (or a link to one), or a file
// saying "gitdir: <path>" (a submodule or a linked work tree).
func gitDirOf(top string) (string, error) {
	dotGit := filepath.Join(top, ".git")
	st, err := os.Stat(dotGit)
	if err != nil {
		return "", notGitDir(dotGit, err)
	}
	if st.IsDir() {
		p, err := filepath.EvalSymlinks(dotGit)
		if err != nil {
			return "", notGitDir(dotGit, err)
		}
		return p, nil
	}
	text, _, err := readPointer(dotGit)
	if err != nil {
		return "", notGitDir(dotGit, err)
	}
	rest, ok := strings.CutPrefix(text, "gitdir: ")
	if !ok {
		return "", notGitDir(dotGit, errors.New(`the file does not start with "gitdir: "`))
	}
	p, err := resolveFrom(top, strings.TrimSpace(rest))
	if err != nil {
		return "", notGitDir(dotGit, err)
	}
	if st, err := os.Stat(p); err != nil || !st.IsDir() {
		return "", notGitDir(p, errors.New("it is not a directory"))
	}
	return p, nil
}

// readPointer reads a small file git keeps a path in; ok is false when
// it does not exist.
func readPointer(path string) (text string, ok bool, err error) {
	f, err := openRegular(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPointerFile+1))
	if err != nil {
		return "", false, err
	}
	if len(data) > maxPointerFile {
		return "", false, fmt.Errorf("%s is larger than %d bytes", path, maxPointerFile)
	}
	return string(data), true, nil
}

// resolveFrom resolves p, relative to base unless absolute, through its
// symbolic links.
func resolveFrom(base, p string) (string, error) {
	if p == "" {
		return "", errors.New("an empty path")
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(base, p)
	}
	return filepath.EvalSymlinks(p)
}

// alternatesOutside returns the first object directory that objects
// borrows from (objects/info/alternates, followed as git follows it)
// outside root, or "".
func alternatesOutside(root, objects string, depth int) (string, error) {
	text, ok, err := readPointer(filepath.Join(objects, "info", "alternates"))
	if err != nil || !ok {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader([]byte(text)))
	sc.Buffer(nil, maxPointerFile+1)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		p := line
		if strings.HasPrefix(line, `"`) {
			// Git reads a quoted line C-style; Go's quoting reads the
			// same escapes.
			if p, err = strconv.Unquote(line); err != nil {
				return "", fmt.Errorf("objects/info/alternates has a line git may read otherwise: %s", line)
			}
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(objects, p)
		}
		resolved, err := filepath.EvalSymlinks(p)
		if err != nil {
			// Git skips an alternate it cannot find; so may we, unless
			// its name already leads out.
			if !pathx.Within(root, filepath.Clean(p)) {
				return p, nil
			}
			continue
		}
		if !pathx.Within(root, resolved) {
			return resolved, nil
		}
		if depth+1 < maxAlternateDepth {
			if out, err := alternatesOutside(root, resolved, depth+1); err != nil || out != "" {
				return out, err
			}
		}
	}
	return "", sc.Err()
}

// ceilingDirs reads GIT_CEILING_DIRECTORIES as git does: absolute
// directories the search for .git does not go up into.
func ceilingDirs() map[string]bool {
	m := map[string]bool{}
	for _, d := range filepath.SplitList(os.Getenv("GIT_CEILING_DIRECTORIES")) {
		if !filepath.IsAbs(d) {
			continue
		}
		m[filepath.Clean(d)] = true
		if r, err := filepath.EvalSymlinks(d); err == nil {
			m[r] = true
		}
	}
	return m
}

// openRegular opens a regular file for reading; anything else (a FIFO,
// whose open would wait for a writer, a device) is refused, whatever
// path became since it was looked at.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", path)
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// checkOwners refuses, with KindOwner, the repository of dir when another
// user than the server's owns one of parts (what, path): its owner could
// change it between the commands that read it, as git's safe.directory
// check guards against.
func checkOwners(dir string, parts [][2]string) error {
	for _, p := range parts {
		ok, uid, err := ownedHere(p[1])
		if err != nil {
			return notGitDir(p[1], err)
		}
		if !ok {
			return &Error{Kind: KindOwner, Message: fmt.Sprintf("the git repository that holds %s is not this server's: its %s (%s) is owned by %s, and the server runs as %s. "+
				"Git refuses such a repository too (\"dubious ownership\"): give a repository the server's user owns, "+
				"or ask the server's operator to allow others with --precommit-any-owner", dir, p[0], p[1], ownerName(uid), serverUser())}
		}
	}
	return nil
}

// Package pathx holds the one containment check every sandbox check of the
// server uses: a call's cwd against --allowed-roots, a files entry or a
// repository's parts against the project root, and the refusal of the
// server's own state directory.
package pathx

import (
	"path/filepath"
	"strings"
)

// Within reports whether p is root or lies below it, by name: it looks up
// nothing, so callers that mean the real place resolve symbolic links in
// both first (filepath.EvalSymlinks).
//
//   - Both must be absolute (filepath.IsAbs); if either is not, Within is
//     false, whatever the two name: a relative path has no place to be
//     compared until it is joined to a directory, which is the caller's
//     choice. (On Windows a path without a volume, `\srv`, is relative.)
//   - Both are cleaned first (filepath.Clean), so trailing separators,
//     doubled separators, "." and ".." do not matter: "/srv/a/../b" is
//     "/srv/b", not below "/srv/a".
//   - root itself counts as within, and every path is within "/" (on
//     Windows, within its volume's root, `C:\`).
//   - The comparison is by whole path components: "/srv/ab" is not within
//     "/srv/a", and a name that only starts with two dots ("/srv/..foo")
//     is an ordinary name within "/srv".
//   - Case follows filepath.Rel: exact bytes on every system but Windows,
//     including macOS (whose default file system ignores case: there
//     "/Srv" is not within "/srv", which refuses rather than allows);
//     on Windows, volume names and components compare without regard to
//     case (strings.EqualFold), as its file systems do by default, and a
//     path on another volume (`D:\x` under `C:\`) or another share is
//     never within.
func Within(root, p string) bool {
	if !filepath.IsAbs(root) || !filepath.IsAbs(p) {
		return false
	}
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel))
}

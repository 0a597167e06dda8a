package access

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/pathx"
)

// ResolveRoots turns the operator's allowed roots into the directories
// they really are (symlinks resolved), so that a candidate resolved the
// same way can be compared with them by path. A root that does not exist
// is an error: a typo would otherwise lock every call out, or worse, a
// later symlink could appear in its place.
func ResolveRoots(roots []string) ([]string, error) {
	out := make([]string, 0, len(roots))
	for _, r := range roots {
		if !filepath.IsAbs(r) {
			abs, err := filepath.Abs(r)
			if err != nil {
				return nil, fmt.Errorf("--allowed-roots %q: %w", r, err)
			}
			r = abs
		}
		real, err := filepath.EvalSymlinks(r)
		if err != nil {
			return nil, fmt.Errorf("--allowed-roots %q: %w", r, err)
		}
		out = append(out, filepath.Clean(real))
	}
	return out, nil
}

// checkRoot refuses a resolved directory outside the allowed roots. Nil
// roots allow every directory (stdio by default: the client is the local
// user, who could start the CLI anywhere).
func (r *Rules) checkRoot(orig, dir string) error {
	if r.AllowedRoots == nil {
		return nil
	}
	for _, root := range r.AllowedRoots {
		if pathx.Within(root, dir) {
			return nil
		}
	}
	shown := fmt.Sprintf("%q", msg.Clip(orig, 200))
	if orig != dir {
		shown += " (" + dir + ")"
	}
	return fmt.Errorf("cwd %s is outside the directories this server allows: %s. Use one of them or a subdirectory, or ask the operator to add it with --allowed-roots (GEMINI_MCP_ALLOWED_ROOTS)",
		shown, strings.Join(r.AllowedRoots, ", "))
}

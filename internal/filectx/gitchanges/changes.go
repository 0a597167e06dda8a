package gitchanges

import (
	"fmt"
	"strings"
)

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

package expert

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/attach"
)

// storeIndex is an attach.Index that indexes at once into one store.
type storeIndex struct{ indexed int }

func (s *storeIndex) Index(_ context.Context, _, _ string, progress func(done, total int)) (string, attach.Report, error) {
	s.indexed++
	progress(1, 1)
	return "fileSearchStores/root", attach.Report{Files: 1, Uploaded: 1}, nil
}
func (s *storeIndex) Drop(context.Context, string, string) error { return nil }
func (s *storeIndex) Cite(context.Context, string, string, []backend.FileSource) (string, []*mcp.ResourceLink, any) {
	return "", nil, []string{}
}

// TestPrecommitFileSearch: precommit's file_search auto indexes the
// project root only when its changes were cut to fit, and its prompt then
// says the code around the changes is in the File Search tool.
func TestPrecommitFileSearch(t *testing.T) {
	t.Parallel()
	ix := &storeIndex{}
	cut := ""
	h := newHarness(t, "api", func(d *Deps) {
		d.FileSearch = &attach.Service{Index: ix}
		d.Files = &fakeFiles{changes: func(context.Context, string, bool, bool) (*filectx.ChangeSet, error) {
			return &filectx.ChangeSet{Text: "diff --git a/x.go b/x.go\n+x", Processed: []filectx.FileNote{{Path: "x.go"}}, Cut: cut}, nil
		}}
	})
	h.mustCall(t, "precommit", map[string]any{"path": "repo", "file_search": "auto"})
	if turn := h.backend.last(); ix.indexed != 0 || turn.Builtins.FileSearchStores != nil || strings.Contains(turn.Prompt, "## Project search") {
		t.Fatalf("auto on changes that fit: %d indexes, stores %v", ix.indexed, turn.Builtins.FileSearchStores)
	}
	cut = "the diff is larger than 4194304 bytes"
	h.mustCall(t, "precommit", map[string]any{"path": "repo", "file_search": "auto"})
	turn := h.backend.last()
	if ix.indexed != 1 || len(turn.Builtins.FileSearchStores) != 1 || !strings.Contains(turn.Prompt, "## Project search\nThe whole project root, with the changes above,") {
		t.Fatalf("auto on changes cut: %d indexes, stores %v\n%s", ix.indexed, turn.Builtins.FileSearchStores, turn.Prompt)
	}
}

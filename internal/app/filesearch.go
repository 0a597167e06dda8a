//go:build !noapi

package app

import (
	"context"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/api"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/attach"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/manifest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// The tools' file_search runs on the API backend's File Search stores,
// whose manifests the session store keeps: replicas sharing a store share
// each caller's File Search store of a root, and an index cut by a
// restart resumes.
func init() {
	fileSearchOf = func(cfg *config.Config, store session.Store, counter backend.TokenCounter, forbidden []string, log *slog.Logger) (*fileSearch, error) {
		b, ok := counter.(*api.Backend)
		if !ok {
			return nil, nil
		}
		ix := filesearch.New(filesearch.NewAPI(b.GenAI()), manifest.Of(store), filesearch.Options{TTL: cfg.API.FileSearchTTL, Forbidden: forbidden, Log: log})
		return &fileSearch{index: &searchIndex{ix: ix, forbidden: forbidden, log: log}, sweeper: ix, ttl: cfg.API.FileSearchTTL, log: log}, nil
	}
}

// searchIndex is attach.Index over a filesearch.Indexer.
type searchIndex struct {
	ix        *filesearch.Indexer
	forbidden []string
	log       *slog.Logger
}

func (s *searchIndex) Index(ctx context.Context, root, scope string, progress func(done, total int)) (string, attach.Report, error) {
	rep, err := s.ix.Index(filesearch.WithProgress(ctx, progress), root, scope)
	if err != nil {
		return "", attach.Report{}, err
	}
	return rep.Store, attach.Report{Files: rep.Files, Uploaded: rep.Uploaded, Unchanged: rep.Unchanged, Deleted: rep.Deleted + rep.Strays,
		Skipped: rep.Skipped, Recreated: rep.Recreated}, nil
}

func (s *searchIndex) Drop(ctx context.Context, root, scope string) error {
	return s.ix.Drop(ctx, root, scope)
}

func (s *searchIndex) Cite(ctx context.Context, root, scope string, files []backend.FileSource) (string, []*mcp.ResourceLink, any) {
	held, err := s.ix.Held(ctx, root, scope)
	if err != nil && s.log != nil {
		s.log.Warn("file search: reading the manifest to cite files", "err", err)
	}
	cs := filesearch.Cite(root, s.forbidden, held, files, 0)
	text, links := filesearch.Render(cs)
	if cs == nil {
		cs = []filesearch.Citation{}
	}
	return text, links, cs
}

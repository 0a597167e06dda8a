package filesearch

import (
	"context"
	"fmt"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
)

// A store's life past its index: its use, its drop on request, and the
// sweep of the stores unused for the TTL.

// Store returns the store of root and scope, marking it used; "" when
// there is none (never indexed, swept or dropped).
func (ix *Indexer) Store(ctx context.Context, root, scope string) (string, error) {
	sb, err := filectx.NewSandbox(root, ix.opts.Forbidden)
	if err != nil {
		return "", err
	}
	key := Key(sb.Root(), scope)
	rec, err := ix.manifests.Get(ctx, key)
	if err != nil || rec.Store == "" {
		return "", err
	}
	return rec.Store, ix.manifests.SetStore(ctx, key, rec.Store, ix.opts.Now())
}

// Drop deletes the store of root and scope and forgets its manifest.
func (ix *Indexer) Drop(ctx context.Context, root, scope string) error {
	sb, err := filectx.NewSandbox(root, ix.opts.Forbidden)
	if err != nil {
		return err
	}
	_, err = ix.drop(ctx, Key(sb.Root(), scope), time.Time{})
	return err
}

// drop deletes key's store and record, when not used since cut (any
// time, for a zero cut), and says whether it did.
func (ix *Indexer) drop(ctx context.Context, key string, cut time.Time) (bool, error) {
	unlock, err := ix.lock(ctx, key)
	if err != nil {
		return false, err
	}
	defer unlock()
	rec, err := ix.manifests.Get(ctx, key)
	if err != nil {
		return false, err
	}
	if !cut.IsZero() && !rec.Used.Before(cut) {
		return false, nil // used since the sweep listed it
	}
	if rec.Store != "" {
		if err := ix.remote.DeleteStore(ctx, rec.Store); err != nil {
			return false, err
		}
	}
	return true, ix.manifests.Remove(ctx, key)
}

// Sweep deletes the stores unused for the TTL and returns how many. A
// store it cannot delete does not stop it: the others are deleted, and
// the error names it (and how many more failed). The caller schedules it.
func (ix *Indexer) Sweep(ctx context.Context) (int, error) {
	recs, err := ix.manifests.List(ctx)
	if err != nil {
		return 0, err
	}
	cut := ix.opts.Now().Add(-ix.opts.TTL)
	n, failed := 0, 0
	var first error
	for _, r := range recs {
		if ctx.Err() != nil {
			return n, context.Cause(ctx)
		}
		if !r.Used.Before(cut) {
			continue
		}
		done, err := ix.drop(ctx, r.Key, cut)
		if err != nil {
			if failed++; first == nil {
				first = fmt.Errorf("file search: sweeping the store %s: %w", r.Store, err)
			}
			continue
		}
		if done {
			n++
		}
	}
	if failed > 1 {
		return n, fmt.Errorf("%w (and %d more stores not deleted)", first, failed-1)
	}
	return n, first
}

// Held returns the paths of root that the caller scope's index holds (its
// manifest's files): the only ones Cite reads.
func (ix *Indexer) Held(ctx context.Context, root, scope string) (map[string]bool, error) {
	sb, err := filectx.NewSandbox(root, ix.opts.Forbidden)
	if err != nil {
		return nil, err
	}
	rec, err := ix.manifests.Get(ctx, Key(sb.Root(), scope))
	if err != nil {
		return nil, err
	}
	held := make(map[string]bool, len(rec.Files))
	for p := range rec.Files {
		held[p] = true
	}
	return held, nil
}

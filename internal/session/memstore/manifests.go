package memstore

import (
	"context"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/manifest"
)

// The store keeps file search's manifests (manifest.Manifests) in a
// manifest.Memory: for this process only, like its sessions, so that a
// restart starts every index anew.

var _ manifest.Keeper = (*Store)(nil)

// Manifests implements manifest.Keeper.
func (s *Store) Manifests() manifest.Manifests { return manifests{s} }

// manifests is the store's manifest.Manifests: a session.Store cannot be
// one itself (both have a Get).
type manifests struct{ s *Store }

// Get implements manifest.Manifests.
func (m manifests) Get(ctx context.Context, key string) (manifest.Record, error) {
	if m.s.isClosed() {
		return manifest.Record{}, errClosed
	}
	return m.s.manifests.Get(ctx, key)
}

// SetStore implements manifest.Manifests.
func (m manifests) SetStore(ctx context.Context, key, store string, used time.Time) error {
	if m.s.isClosed() {
		return errClosed
	}
	return m.s.manifests.SetStore(ctx, key, store, used)
}

// ReplaceStore implements manifest.Manifests.
func (m manifests) ReplaceStore(ctx context.Context, key, old, store string, used time.Time) error {
	if m.s.isClosed() {
		return errClosed
	}
	return m.s.manifests.ReplaceStore(ctx, key, old, store, used)
}

// PutFile implements manifest.Manifests.
func (m manifests) PutFile(ctx context.Context, key, path string, e manifest.Entry) error {
	if m.s.isClosed() {
		return errClosed
	}
	return m.s.manifests.PutFile(ctx, key, path, e)
}

// DeleteFile implements manifest.Manifests.
func (m manifests) DeleteFile(ctx context.Context, key, path string) error {
	if m.s.isClosed() {
		return errClosed
	}
	return m.s.manifests.DeleteFile(ctx, key, path)
}

// Remove implements manifest.Manifests.
func (m manifests) Remove(ctx context.Context, key string) error {
	if m.s.isClosed() {
		return errClosed
	}
	return m.s.manifests.Remove(ctx, key)
}

// List implements manifest.Manifests.
func (m manifests) List(ctx context.Context) ([]manifest.Record, error) {
	if m.s.isClosed() {
		return nil, errClosed
	}
	return m.s.manifests.List(ctx)
}

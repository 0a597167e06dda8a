package memstore

import (
	"errors"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/manifest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/manifesttest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// TestManifestsConformance: the store in memory keeps the promises of
// manifest.Manifests, reached as the server reaches them (manifest.Of,
// through session.Observed); its two "replicas" are one store.
func TestManifestsConformance(t *testing.T) {
	manifesttest.Run(t, func(t *testing.T) (manifest.Manifests, manifest.Manifests) {
		s := New(session.Options{})
		t.Cleanup(func() { s.Close() })
		m := manifest.Of(session.Observed(s, func(string, time.Duration, error) {}))
		return m, s.Manifests()
	})
}

// TestManifestsClosed: after Close every call fails as the store's other
// calls do.
func TestManifestsClosed(t *testing.T) {
	s := New(session.Options{})
	m := s.Manifests()
	if err := m.SetStore(t.Context(), "k", "fileSearchStores/s", time.Now()); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := m.Get(t.Context(), "k"); !errors.Is(err, session.ErrUnavailable) {
		t.Fatalf("Get after Close: %v", err)
	}
	if err := m.PutFile(t.Context(), "k", "a.go", manifest.Entry{Hash: "h", Document: "d"}); !errors.Is(err, session.ErrUnavailable) {
		t.Fatalf("PutFile after Close: %v", err)
	}
}

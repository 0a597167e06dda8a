package filesearch

import (
	"context"
	"maps"
	"sync"
	"time"
)

// Entry is what the manifest keeps of one indexed file.
type Entry struct {
	Hash     string // hex sha256 of the content uploaded
	Document string // the document's name in the store
}

// Record is the manifest of one (root, scope): its store, when it was last
// used, and its files by path.
type Record struct {
	Key   string
	Store string // "" before a store is made
	Used  time.Time
	Files map[string]Entry
}

// Manifests keeps the records. Entries are written one at a time, as
// files finish, so that an index cut short resumes where it stopped.
// MemoryManifests is one; a session store may be another.
type Manifests interface {
	// Get returns the record of key, a copy; one without a Store when
	// there is none.
	Get(ctx context.Context, key string) (Record, error)
	// SetStore sets key's store and use time, dropping its files when
	// the store changes.
	SetStore(ctx context.Context, key, store string, used time.Time) error
	// PutFile and DeleteFile change one file's entry of key.
	PutFile(ctx context.Context, key, path string, e Entry) error
	DeleteFile(ctx context.Context, key, path string) error
	// Remove forgets key.
	Remove(ctx context.Context, key string) error
	// List returns every record without its files.
	List(ctx context.Context) ([]Record, error)
}

// MemoryManifests keeps the records in memory, for one process. The zero
// value is ready to use.
type MemoryManifests struct {
	mu   sync.Mutex
	recs map[string]*Record
}

// Get implements Manifests.
func (m *MemoryManifests) Get(_ context.Context, key string) (Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.recs[key]
	if r == nil {
		return Record{Key: key, Files: map[string]Entry{}}, nil
	}
	out := *r
	out.Files = maps.Clone(r.Files)
	return out, nil
}

// SetStore implements Manifests.
func (m *MemoryManifests) SetStore(_ context.Context, key, store string, used time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.recs == nil {
		m.recs = map[string]*Record{}
	}
	r := m.recs[key]
	if r == nil || r.Store != store {
		r = &Record{Key: key, Store: store, Files: map[string]Entry{}}
		m.recs[key] = r
	}
	r.Used = used
	return nil
}

// PutFile implements Manifests.
func (m *MemoryManifests) PutFile(_ context.Context, key, path string, e Entry) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.recs[key]; r != nil {
		r.Files[path] = e
	}
	return nil
}

// DeleteFile implements Manifests.
func (m *MemoryManifests) DeleteFile(_ context.Context, key, path string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.recs[key]; r != nil {
		delete(r.Files, path)
	}
	return nil
}

// Remove implements Manifests.
func (m *MemoryManifests) Remove(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.recs, key)
	return nil
}

// List implements Manifests.
func (m *MemoryManifests) List(_ context.Context) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Record, 0, len(m.recs))
	for _, r := range m.recs {
		out = append(out, Record{Key: r.Key, Store: r.Store, Used: r.Used})
	}
	return out, nil
}

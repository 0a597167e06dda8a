package manifest

import (
	"context"
	"maps"
	"sync"
	"time"
)

// Memory keeps the records in memory, for one process. The zero value is
// ready to use.
type Memory struct {
	mu   sync.Mutex
	recs map[string]*Record
}

var _ Manifests = (*Memory)(nil)

// Get implements Manifests.
func (m *Memory) Get(_ context.Context, key string) (Record, error) {
	if err := CheckKey(key); err != nil {
		return Record{}, err
	}
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
func (m *Memory) SetStore(ctx context.Context, key, store string, used time.Time) error {
	return m.set(key, store, used, false, "")
}

// ReplaceStore implements Manifests.
func (m *Memory) ReplaceStore(_ context.Context, key, old, store string, used time.Time) error {
	return m.set(key, store, used, true, old)
}

func (m *Memory) set(key, store string, used time.Time, cas bool, old string) error {
	if err := CheckStore(key, store); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.recs == nil {
		m.recs = map[string]*Record{}
	}
	r := m.recs[key]
	if cur := ""; cas {
		if r != nil {
			cur = r.Store
		}
		if cur != old {
			return TakenError(key, old, cur)
		}
	}
	if r == nil || r.Store != store {
		r = &Record{Key: key, Store: store, Files: map[string]Entry{}}
		m.recs[key] = r
	}
	r.Used = used.Truncate(time.Millisecond)
	return nil
}

// PutFile implements Manifests.
func (m *Memory) PutFile(_ context.Context, key, path string, e Entry) error {
	if err := CheckFile(key, path, e); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.recs[key]
	if r == nil {
		return nil
	}
	if _, ok := r.Files[path]; !ok && len(r.Files) >= MaxFiles {
		return FilesError()
	}
	r.Files[path] = e
	return nil
}

// DeleteFile implements Manifests.
func (m *Memory) DeleteFile(_ context.Context, key, path string) error {
	if err := CheckPath(key, path); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.recs[key]; r != nil {
		delete(r.Files, path)
	}
	return nil
}

// Remove implements Manifests.
func (m *Memory) Remove(_ context.Context, key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.recs, key)
	return nil
}

// List implements Manifests.
func (m *Memory) List(_ context.Context) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Record, 0, len(m.recs))
	for _, r := range m.recs {
		out = append(out, Record{Key: r.Key, Store: r.Store, Used: r.Used})
	}
	return out, nil
}

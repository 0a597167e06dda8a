package filesearch

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/manifest"
)

// FileManifests keeps the records in a directory, one file per key, so
// that an index cut short by a restart resumes with what is missing. A
// file is a log of JSON lines (the key, store and use time first, then
// one line per file put or deleted), appended to as files finish and
// rewritten whole when the store or its use time is set. A line cut short
// by a crash is ignored when the log is read.
type FileManifests struct {
	dir string
	mu  sync.Mutex
	// paths are the paths of the keys PutFile has read, so that it counts
	// them against manifest.MaxFiles without reading the log each time.
	paths map[string]map[string]bool
}

// NewFileManifests returns the FileManifests of dir, making it (0700)
// when it is not there.
func NewFileManifests(dir string) (*FileManifests, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("file search: the manifest directory: %w", err)
	}
	return &FileManifests{dir: dir, paths: map[string]map[string]bool{}}, nil
}

type logLine struct {
	Key   string    `json:"key,omitempty"`
	Store string    `json:"store,omitempty"`
	Used  time.Time `json:"used,omitzero"`
	Put   string    `json:"put,omitempty"`
	Del   string    `json:"del,omitempty"`
	Hash  string    `json:"hash,omitempty"`
	Doc   string    `json:"doc,omitempty"`
}

func (m *FileManifests) path(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(m.dir, hex.EncodeToString(sum[:16])+".jsonl")
}

// read replays the log at path; a missing file is an empty record.
func read(path, key string) (Record, error) {
	rec := Record{Key: key, Files: map[string]Entry{}}
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return rec, nil
	}
	if err != nil {
		return rec, fmt.Errorf("file search: reading a manifest: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	first := true
	for sc.Scan() {
		var l logLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue // cut short by a crash
		}
		switch {
		case first:
			if key != "" && l.Key != key {
				return Record{Key: key, Files: map[string]Entry{}}, nil // another key's hash: not ours
			}
			rec.Key, rec.Store, rec.Used = l.Key, l.Store, l.Used
		case l.Put != "":
			rec.Files[l.Put] = Entry{Hash: l.Hash, Document: l.Doc}
		case l.Del != "":
			delete(rec.Files, l.Del)
		}
		first = false
	}
	if err := sc.Err(); err != nil {
		return rec, fmt.Errorf("file search: reading a manifest: %w", err)
	}
	return rec, nil
}

// Get implements Manifests.
func (m *FileManifests) Get(_ context.Context, key string) (Record, error) {
	if err := manifest.CheckKey(key); err != nil {
		return Record{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return read(m.path(key), key)
}

// SetStore implements Manifests: the log is rewritten from its record.
func (m *FileManifests) SetStore(_ context.Context, key, store string, used time.Time) error {
	return m.set(key, store, used, false, "")
}

// ReplaceStore implements Manifests.
func (m *FileManifests) ReplaceStore(_ context.Context, key, old, store string, used time.Time) error {
	return m.set(key, store, used, true, old)
}

func (m *FileManifests) set(key, store string, used time.Time, cas bool, old string) error {
	if err := manifest.CheckStore(key, store); err != nil {
		return err
	}
	used = used.Truncate(time.Millisecond)
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.paths, key)
	rec, err := read(m.path(key), key)
	if err != nil {
		return err
	}
	if cas && rec.Store != old {
		return manifest.TakenError(key, old, rec.Store)
	}
	if rec.Store != store {
		rec.Files = map[string]Entry{}
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.Encode(logLine{Key: key, Store: store, Used: used})
	for p, e := range rec.Files {
		enc.Encode(logLine{Put: p, Hash: e.Hash, Doc: e.Document})
	}
	tmp := m.path(key) + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("file search: writing a manifest: %w", err)
	}
	if err := os.Rename(tmp, m.path(key)); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("file search: writing a manifest: %w", err)
	}
	return nil
}

func (m *FileManifests) appendLine(key string, l logLine) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	paths := m.paths[key]
	if paths == nil {
		rec, err := read(m.path(key), key)
		if err != nil {
			return err
		}
		if rec.Store == "" {
			return nil // no store set: nothing to add to
		}
		paths = make(map[string]bool, len(rec.Files))
		for p := range rec.Files {
			paths[p] = true
		}
		m.paths[key] = paths
	}
	if l.Put != "" && !paths[l.Put] && len(paths) >= manifest.MaxFiles {
		return manifest.FilesError()
	}
	line, _ := json.Marshal(l)
	f, err := os.OpenFile(m.path(key), os.O_WRONLY|os.O_APPEND, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // no store set: nothing to add to
	}
	if err != nil {
		return fmt.Errorf("file search: writing a manifest: %w", err)
	}
	_, err = f.Write(append(line, '\n'))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		delete(m.paths, key) // the line may be in the log or not
		return fmt.Errorf("file search: writing a manifest: %w", err)
	}
	if l.Put != "" {
		paths[l.Put] = true
	} else {
		delete(paths, l.Del)
	}
	return nil
}

// PutFile implements Manifests.
func (m *FileManifests) PutFile(_ context.Context, key, path string, e Entry) error {
	if err := manifest.CheckFile(key, path, e); err != nil {
		return err
	}
	return m.appendLine(key, logLine{Put: path, Hash: e.Hash, Doc: e.Document})
}

// DeleteFile implements Manifests.
func (m *FileManifests) DeleteFile(_ context.Context, key, path string) error {
	if err := manifest.CheckPath(key, path); err != nil {
		return err
	}
	return m.appendLine(key, logLine{Del: path})
}

// Remove implements Manifests.
func (m *FileManifests) Remove(_ context.Context, key string) error {
	if err := manifest.CheckKey(key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.paths, key)
	if err := os.Remove(m.path(key)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("file search: removing a manifest: %w", err)
	}
	return nil
}

// List implements Manifests.
func (m *FileManifests) List(_ context.Context) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	names, err := filepath.Glob(filepath.Join(m.dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, n := range names {
		rec, err := read(n, "")
		if err != nil {
			return nil, err
		}
		if rec.Key != "" {
			out = append(out, Record{Key: rec.Key, Store: rec.Store, Used: rec.Used})
		}
	}
	return out, nil
}

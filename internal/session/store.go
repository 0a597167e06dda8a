// Package session keeps this server's record of the Gemini CLI sessions it
// started or continued: which working directory each belongs to (the CLI
// keys sessions by exact cwd), its model, and how far it has gone. Clients
// restart stdio servers all the time, so the records live on disk.
//
// Each record is one small JSON file, replaced atomically (write to a temp
// file, then rename). Several server processes may share a directory
// without locks: a reader sees a whole record or none, and two processes
// touching the same session at once lose at most one turn count.
package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Record is what the server knows of one CLI session.
type Record struct {
	ID      string    `json:"id"`
	Cwd     string    `json:"cwd"`
	Model   string    `json:"model,omitempty"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	Turns   int       `json:"turns"`
	// Owner is the id of the HTTP bearer token that started the session
	// ("" for stdio, HTTP without tokens, and records written before
	// owners were kept); over HTTP only that token may continue it.
	Owner string `json:"owner,omitempty"`
	// LastClient names the client that ran the latest turn ("token:…" or
	// "mcp:…", "" on stdio), so that "the newest session" can mean the
	// newest of the client asking.
	LastClient string `json:"lastClient,omitempty"`
	// Backend is the family of the backend that started the session: "cli"
	// (one-shot and warm, which share the CLI's session files) or "api".
	// Records written before it was kept have none, and count as "cli".
	Backend string `json:"backend,omitempty"`
}

// Family returns the family of the backend that started the session.
func (r Record) Family() string {
	if r.Backend == "" {
		return "cli"
	}
	return r.Backend
}

// Turn is what Touch records of one finished turn.
type Turn struct {
	Cwd    string
	Model  string
	Owner  string // kept from the first turn on
	Client string
	// Backend is the family of the backend that ran the turn ("cli" or
	// "api"); kept from the first turn on.
	Backend string
}

// Store is a directory of session records. It is safe for concurrent use.
type Store struct {
	dir string
	mu  sync.Mutex // serialises read-modify-write within this process
}

// validID accepts the lower-case UUIDs records are named by.
func validID(id string) bool {
	return IsUUID(id) && strings.ToLower(id) == id
}

// Open opens (creating, private to the user) the store in dir.
func Open(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("session store: no directory given")
	}
	sessions := filepath.Join(dir, "sessions")
	if err := os.MkdirAll(sessions, 0o700); err != nil {
		return nil, fmt.Errorf("session store: %w", err)
	}
	removeStaleTemps(sessions, time.Now().Add(-staleTemp))
	return &Store{dir: sessions}, nil
}

// staleTemp is how old a temp file must be before Open removes it. A write
// takes milliseconds; the margin spares one that another server process,
// sharing the directory, is making right now.
const staleTemp = time.Minute

// removeStaleTemps removes the temp files of writes that never finished (a
// process killed between creating and renaming one), older than before.
// It is best effort: a file it cannot remove harms nothing but space.
func removeStaleTemps(dir string, before time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tempPrefix) || !e.Type().IsRegular() {
			continue
		}
		if fi, err := e.Info(); err == nil && fi.ModTime().Before(before) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// Dir is the directory holding the records.
func (s *Store) Dir() string { return s.dir }

func (s *Store) path(id string) (string, error) {
	if !validID(id) {
		return "", fmt.Errorf("session store: invalid session id %q", id)
	}
	return filepath.Join(s.dir, id+".json"), nil
}

// Get returns the record of id, and whether there is one.
func (s *Store) Get(id string) (Record, bool, error) {
	p, err := s.path(strings.ToLower(id))
	if err != nil {
		return Record{}, false, err
	}
	return readRecord(p)
}

func readRecord(p string) (Record, bool, error) {
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return Record{}, false, nil
	}
	if err != nil {
		return Record{}, false, fmt.Errorf("session store: %w", err)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return Record{}, false, fmt.Errorf("session store: %s is corrupt: %w", p, err)
	}
	return r, true, nil
}

// Touch records a finished turn of session id: it creates the record on
// the first turn and counts the turn.
func (s *Store) Touch(id string, t Turn, now time.Time) (Record, error) {
	id = strings.ToLower(id)
	p, err := s.path(id)
	if err != nil {
		return Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok, err := readRecord(p)
	if err != nil {
		// A corrupt record is replaced rather than blocking the session.
		ok = false
	}
	if !ok {
		r = Record{ID: id, Created: now, Owner: t.Owner, Backend: t.Backend}
	}
	r.Cwd = t.Cwd
	if t.Model != "" {
		r.Model = t.Model
	}
	r.LastClient = t.Client
	r.Updated = now
	r.Turns++
	return r, writeAtomic(p, r)
}

// Latest returns the most recently updated record, restricted to cwd when
// cwd is not empty, and to the records match accepts when match is not nil.
func (s *Store) Latest(cwd string, match func(Record) bool) (Record, bool, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return Record{}, false, fmt.Errorf("session store: %w", err)
	}
	var best Record
	found := false
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") || !validID(strings.TrimSuffix(name, ".json")) {
			continue
		}
		r, ok, err := readRecord(filepath.Join(s.dir, name))
		if err != nil || !ok {
			continue // a record being replaced or a corrupt one
		}
		if cwd != "" && r.Cwd != cwd || match != nil && !match(r) {
			continue
		}
		if !found || r.Updated.After(best.Updated) {
			best, found = r, true
		}
	}
	return best, found, nil
}

// tempPrefix starts the name of a record being written.
const tempPrefix = ".tmp-"

func writeAtomic(p string, r Record) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), tempPrefix+"*")
	if err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	tmp := f.Name()
	_, werr := f.Write(append(data, '\n'))
	cerr := f.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp)
		return fmt.Errorf("session store: writing %s: %w", p, errors.Join(werr, cerr))
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("session store: %w", err)
	}
	return nil
}

// DefaultDir is where records live unless configured: the user's state
// directory ($XDG_STATE_HOME or ~/.local/state on Linux and other Unix),
// the user's config directory on macOS and Windows.
func DefaultDir() (string, error) {
	switch {
	case os.Getenv("XDG_STATE_HOME") != "":
		return filepath.Join(os.Getenv("XDG_STATE_HOME"), "gemini-mcp-server"), nil
	case isUnixLike():
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		return filepath.Join(home, ".local", "state", "gemini-mcp-server"), nil
	}
	cfg, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cfg, "gemini-mcp-server"), nil
}

// Package session keeps this server's record of the Gemini CLI sessions it
// started or continued: which working directory each belongs to (the CLI
// keys sessions by exact cwd), its model, and how far it has gone. Clients
// restart stdio servers all the time, so the records live on disk.
//
// Each record is one small JSON file, replaced atomically (write to a temp
// file, then rename). Several server processes may share a directory
// without locks: a reader sees a whole record or none, and two processes
// touching the same session at once lose at most one turn count.
//
// A new record is written before Touch returns, so that every process
// finds a session as soon as its first answer is out. Later turns only
// update it (count, time, model, client): those writes happen in the
// background, off the call's path, several touches of one record
// between two writes making one write. A process killed meanwhile loses
// at most those not-yet-written updates, never a record; Close writes
// them.
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
	// Title is the opening words of the session's first prompt, for the
	// sessions tool.
	Title string `json:"title,omitempty"`
	// Host is the host whose Gemini CLI keeps the session's files (CLI
	// backends only): another host cannot continue it.
	Host string `json:"host,omitempty"`
	// SystemPrompt is the system prompt the session started with, which
	// its later turns keep.
	SystemPrompt string `json:"systemPrompt,omitempty"`
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
	// Title, Host and SystemPrompt are kept from the first turn on (see
	// Record).
	Title        string
	Host         string
	SystemPrompt string
}

// FileStore is a directory of session records. It is safe for concurrent use.
type FileStore struct {
	dir string
	mu  sync.Mutex // serialises read-modify-write within this process
	// pending are the updated records not written yet, by id; the writer
	// goroutine (running while there are some) writes them.
	pending map[string]Record
	writing bool
	closed  bool
	idle    *sync.Cond // signalled when the writer stops
	// writeFile writes a record (writeAtomic; a test wraps it).
	writeFile func(p string, r Record) error
}

// validID accepts the lower-case UUIDs records are named by.
func validID(id string) bool {
	return IsUUID(id) && strings.ToLower(id) == id
}

// Open opens (creating, private to the user) the store in dir.
func Open(dir string) (*FileStore, error) {
	if dir == "" {
		return nil, errors.New("session store: no directory given")
	}
	sessions := filepath.Join(dir, "sessions")
	if err := os.MkdirAll(sessions, 0o700); err != nil {
		return nil, fmt.Errorf("session store: %w", err)
	}
	removeStaleTemps(sessions, time.Now().Add(-staleTemp))
	s := &FileStore{dir: sessions, pending: map[string]Record{}, writeFile: writeAtomic}
	s.idle = sync.NewCond(&s.mu)
	return s, nil
}

// Close writes the updates not written yet and makes later ones
// synchronous. The store stays usable.
func (s *FileStore) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for s.writing {
		s.idle.Wait()
	}
	s.writePending()
}

// Flush writes the updates not written yet.
func (s *FileStore) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.writing {
		s.idle.Wait()
	}
	s.writePending()
}

// writePending writes every pending record; s.mu must be held.
func (s *FileStore) writePending() {
	for id, r := range s.pending {
		if p, err := s.path(id); err == nil {
			_ = s.writeFile(p, r) // best effort, as in the background
		}
		delete(s.pending, id)
	}
}

// write is the writer goroutine: it writes pending records until there
// are none, then ends (the next update starts another).
func (s *FileStore) write() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.pending) > 0 {
		// Records stay pending until written, so that a reader meanwhile
		// sees them rather than what is on disk.
		batch := make(map[string]Record, len(s.pending))
		for id, r := range s.pending {
			batch[id] = r
		}
		s.mu.Unlock()
		for id, r := range batch {
			if p, err := s.path(id); err == nil {
				// An update that cannot be written is lost, as the turn
				// count of a failed write always was; the next touch
				// tries again.
				_ = s.writeFile(p, r)
			}
		}
		s.mu.Lock()
		for id, r := range batch {
			if s.pending[id] == r {
				delete(s.pending, id) // not touched again meanwhile
			}
		}
	}
	s.writing = false
	s.idle.Broadcast()
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
func (s *FileStore) Dir() string { return s.dir }

func (s *FileStore) path(id string) (string, error) {
	if !validID(id) {
		return "", fmt.Errorf("session store: invalid session id %q", id)
	}
	return filepath.Join(s.dir, id+".json"), nil
}

// Get returns the record of id, and whether there is one.
func (s *FileStore) Get(id string) (Record, bool, error) {
	id = strings.ToLower(id)
	p, err := s.path(id)
	if err != nil {
		return Record{}, false, err
	}
	s.mu.Lock()
	r, ok := s.pending[id]
	s.mu.Unlock()
	if ok {
		return r, true, nil
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
func (s *FileStore) Touch(id string, t Turn, now time.Time) (Record, error) {
	id = strings.ToLower(id)
	p, err := s.path(id)
	if err != nil {
		return Record{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.pending[id]
	if !ok {
		var err error
		r, ok, err = readRecord(p)
		if err != nil {
			// A corrupt record is replaced rather than blocking the session.
			ok = false
		}
	}
	existed := ok
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
	if !existed || s.closed {
		return r, s.writeFile(p, r)
	}
	s.pending[id] = r
	if !s.writing {
		s.writing = true
		go s.write()
	}
	return r, nil
}

// Latest returns the most recently updated record, restricted to cwd when
// cwd is not empty, and to the records match accepts when match is not nil.
func (s *FileStore) Latest(cwd string, match func(Record) bool) (Record, bool, error) {
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
		s.mu.Lock()
		r, ok := s.pending[strings.TrimSuffix(name, ".json")]
		s.mu.Unlock()
		if !ok {
			var err error
			r, ok, err = readRecord(filepath.Join(s.dir, name))
			if err != nil || !ok {
				continue // a record being replaced or a corrupt one
			}
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

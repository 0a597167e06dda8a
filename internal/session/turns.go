package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// The API backend keeps a conversation's turns itself (the Gemini API
// remembers nothing between calls). Each session's turns are one
// append-only JSON Lines file beside its record, <id>.turns.jsonl: one
// turn per line, written with a single write before the call returns, so
// that appending costs the same however long the conversation is. A
// process killed at any moment (kill -9) loses no turn it acknowledged:
// the write is in the kernel's hands when AppendTurn returns. The file is
// not fsynced, as SQLite's WAL mode with synchronous=NORMAL does not sync
// each commit: a power cut or a kernel crash may lose the last turns, not
// the file. (An fsync per turn, and one of the directory for a new
// session, cost more than the rest of an API call's server work.) A last
// line without its newline is a torn write: readers ignore it, and the
// next append cuts it off before writing.
//
// A turn is opaque here: any JSON value, which the backend defines. This
// keeps the store free of the Gemini SDK, which only the API backend links.

const turnsSuffix = ".turns.jsonl"

// turnLocks serialises appends to one session within this process; appends
// to different sessions run in parallel. Processes sharing the directory
// rely on O_APPEND, under which one write of a line lands whole.
var turnLocks sync.Map // file path → *sync.Mutex

func (s *FileStore) turnsPath(id string) (string, error) {
	id = strings.ToLower(id)
	if !validID(id) {
		return "", fmt.Errorf("session store: invalid session id %q", id)
	}
	return filepath.Join(s.dir, id+turnsSuffix), nil
}

// LoadTurns returns the turns recorded for session id, oldest first, and
// whether the session has any: ok is false for a session never recorded.
func (s *FileStore) LoadTurns(id string) (turns []json.RawMessage, ok bool, err error) {
	p, err := s.turnsPath(id)
	if err != nil {
		return nil, false, err
	}
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("session store: %w", err)
	}
	// Whatever follows the last newline is a write a crash cut short.
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
	} else {
		data = nil
	}
	for n := 1; len(data) > 0; n++ {
		line, rest, _ := bytes.Cut(data, []byte{'\n'})
		data = rest
		if !json.Valid(line) {
			return nil, false, fmt.Errorf("session store: %s is corrupt at line %d", p, n)
		}
		turns = append(turns, json.RawMessage(line))
	}
	return turns, len(turns) > 0, nil
}

// AppendTurn records one more turn of session id, creating the session's
// file on its first turn. It returns once the turn is written (see above
// for what that survives).
func (s *FileStore) AppendTurn(id string, turn json.RawMessage) error {
	p, err := s.turnsPath(id)
	if err != nil {
		return err
	}
	var line bytes.Buffer
	if err := json.Compact(&line, turn); err != nil {
		return fmt.Errorf("session store: a turn must be JSON: %w", err)
	}
	line.WriteByte('\n')

	mu, _ := turnLocks.LoadOrStore(p, new(sync.Mutex))
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()

	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("session store: %w", err)
	}
	defer f.Close()
	if err := cutTornLine(f); err != nil {
		return fmt.Errorf("session store: %s: %w", p, err)
	}
	if _, err := f.Write(line.Bytes()); err != nil {
		return fmt.Errorf("session store: %s: %w", p, err)
	}
	return f.Close()
}

// cutTornLine truncates f after its last newline when its last line was
// never finished, so that the next line starts on a line of its own. It
// reads only the file's tail in the usual case of a clean file.
func cutTornLine(f *os.File) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	end := fi.Size()
	if end == 0 {
		return nil
	}
	var last [1]byte
	if _, err := f.ReadAt(last[:], end-1); err != nil {
		return err
	}
	if last[0] == '\n' {
		return nil
	}
	buf := make([]byte, 4096)
	for pos := end; pos > 0; {
		n := int64(len(buf))
		if pos < n {
			n = pos
		}
		pos -= n
		if _, err := f.ReadAt(buf[:n], pos); err != nil && err != io.EOF {
			return err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			return f.Truncate(pos + int64(i) + 1)
		}
	}
	return f.Truncate(0)
}

// DeleteTurns removes the recorded turns of session id; a session without
// any is not an error.
func (s *FileStore) DeleteTurns(id string) error {
	p, err := s.turnsPath(id)
	if err != nil {
		return err
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("session store: %w", err)
	}
	return nil
}

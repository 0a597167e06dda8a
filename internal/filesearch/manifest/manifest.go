// Package manifest is what package filesearch keeps of each indexed
// project root (a manifest: the root's File Search store, when it was last
// used, and each file's content hash and document), and the interface of
// the places that keep it: the session stores (embedded, Redis, memory),
// so that replicas sharing a store share one manifest per (root, caller
// scope) and a restarted server resumes an index; filesearch's own file
// and memory ones.
//
// It is a package of its own, importing neither the genai SDK nor
// filesearch, so that the session stores keep manifests without linking
// the API backend into a build without it (-tags noapi).
package manifest

import (
	"context"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
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
// Every method is safe for concurrent use, also by several processes
// sharing one store; a value past a bound (Check) is refused with an
// error and changes nothing. Use times are kept to the millisecond.
type Manifests interface {
	// Get returns the record of key, a copy; one without a Store when
	// there is none.
	Get(ctx context.Context, key string) (Record, error)
	// SetStore sets key's store and use time, dropping its files when
	// the store changes.
	SetStore(ctx context.Context, key, store string, used time.Time) error
	// ReplaceStore is SetStore when key's record names the store old
	// ("" for none); else it changes nothing and returns an error
	// wrapping ErrStoreTaken, so that of two processes making a store for
	// one key, one records its own and the other learns of it.
	ReplaceStore(ctx context.Context, key, old, store string, used time.Time) error
	// PutFile and DeleteFile change one file's entry of key; both do
	// nothing to a key without a store. A PutFile of a new path beyond
	// MaxFiles is refused.
	PutFile(ctx context.Context, key, path string, e Entry) error
	DeleteFile(ctx context.Context, key, path string) error
	// Remove forgets key.
	Remove(ctx context.Context, key string) error
	// List returns every record without its files, in no set order.
	List(ctx context.Context) ([]Record, error)
}

// Bounds of what a manifest keeps: every implementation refuses more.
const (
	// MaxKeyBytes bounds a key: a resolved root and a caller scope.
	MaxKeyBytes = 8 << 10
	// MaxPathBytes bounds a file's path (Linux's PATH_MAX).
	MaxPathBytes = 4096
	// MaxNameBytes bounds a store's or a document's name, which the API
	// makes ("fileSearchStores/…/documents/…", well under 200 bytes).
	MaxNameBytes = 1024
	// MaxHashBytes bounds an entry's hash (a hex sha256 is 64).
	MaxHashBytes = 128
	// MaxFiles bounds the files of one manifest: twice the indexer's
	// default (filesearch.DefaultMaxFiles), since an index that replaces
	// every file of a root at its limit puts each new path before it
	// deletes the old ones. An indexer must not index more than half of
	// it in one store.
	MaxFiles = 50_000
)

// CheckKey checks a key: not empty, valid UTF-8 and at most MaxKeyBytes.
func CheckKey(key string) error {
	if key == "" || len(key) > MaxKeyBytes || !utf8.ValidString(key) {
		return fmt.Errorf("file search manifest: a key is 1 to %d bytes of UTF-8 (got %d bytes)", MaxKeyBytes, len(key))
	}
	return nil
}

// CheckStore checks SetStore's arguments.
func CheckStore(key, store string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	return checkName("store", store)
}

// CheckFile checks PutFile's arguments (DeleteFile's with a zero Entry
// unchecked: see CheckPath).
func CheckFile(key, path string, e Entry) error {
	if err := CheckPath(key, path); err != nil {
		return err
	}
	if e.Hash == "" || len(e.Hash) > MaxHashBytes || !hashLike(e.Hash) {
		return fmt.Errorf("file search manifest: a hash is 1 to %d letters, digits or base64's +/=_- (got %q)", MaxHashBytes, clip(e.Hash))
	}
	return checkName("document", e.Document)
}

// CheckPath checks a key and a file's path: not empty, valid UTF-8
// without NUL, at most MaxPathBytes.
func CheckPath(key, path string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if path == "" || len(path) > MaxPathBytes || !utf8.ValidString(path) || containsByte(path, 0) {
		return fmt.Errorf("file search manifest: a path is 1 to %d bytes of UTF-8 without NUL (got %d bytes: %q)", MaxPathBytes, len(path), clip(path))
	}
	return nil
}

func checkName(what, name string) error {
	if name == "" || len(name) > MaxNameBytes || !utf8.ValidString(name) || containsByte(name, 0) {
		return fmt.Errorf("file search manifest: a %s name is 1 to %d bytes of UTF-8 without NUL (got %d bytes: %q)", what, MaxNameBytes, len(name), clip(name))
	}
	return nil
}

// ErrStoreTaken is the error of a ReplaceStore refused because the record
// names another store than the one expected.
var ErrStoreTaken = errors.New("file search manifest: the record names another store than expected")

// TakenError is ReplaceStore's error for key, whose record names cur.
func TakenError(key, old, cur string) error {
	if old == "" {
		old = "none"
	}
	if cur == "" {
		cur = "none"
	}
	return fmt.Errorf("%w: %q names %s, not %s", ErrStoreTaken, clip(key), clip(cur), clip(old))
}

// FilesError is the error of a PutFile refused because key's manifest
// has MaxFiles files already.
func FilesError() error {
	return fmt.Errorf("file search manifest: a manifest keeps at most %d files; this one is full", MaxFiles)
}

func hashLike(s string) bool {
	for i := range len(s) {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '=' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func containsByte(s string, b byte) bool {
	for i := range len(s) {
		if s[i] == b {
			return true
		}
	}
	return false
}

func clip(s string) string {
	if len(s) > 80 {
		s = s[:80] + "…"
	}
	return s
}

// Keeper is a store that keeps manifests: each session store of this
// module is one. (A session.Store cannot be a Manifests itself: both have
// a Get.)
type Keeper interface {
	Manifests() Manifests
}

// Of returns the manifests of the session store st, which may be wrapped
// (session.Opening, session.Observed): every store of this module keeps
// them beside its sessions (Keeper). A store that does not is an error of
// each call, wrapping session.ErrUnavailable.
func Of(st session.Store) Manifests { return of{st} }

type of struct{ st session.Store }

func (o of) store(ctx context.Context) (Manifests, error) {
	st, err := session.Unwrap(ctx, o.st)
	if err != nil {
		return nil, err
	}
	k, ok := st.(Keeper)
	if !ok {
		return nil, fmt.Errorf("%w: the session store %T keeps no file search manifests", session.ErrUnavailable, st)
	}
	return k.Manifests(), nil
}

func (o of) Get(ctx context.Context, key string) (Record, error) {
	m, err := o.store(ctx)
	if err != nil {
		return Record{}, err
	}
	return m.Get(ctx, key)
}

func (o of) SetStore(ctx context.Context, key, store string, used time.Time) error {
	m, err := o.store(ctx)
	if err != nil {
		return err
	}
	return m.SetStore(ctx, key, store, used)
}

func (o of) ReplaceStore(ctx context.Context, key, old, store string, used time.Time) error {
	m, err := o.store(ctx)
	if err != nil {
		return err
	}
	return m.ReplaceStore(ctx, key, old, store, used)
}

func (o of) PutFile(ctx context.Context, key, path string, e Entry) error {
	m, err := o.store(ctx)
	if err != nil {
		return err
	}
	return m.PutFile(ctx, key, path, e)
}

func (o of) DeleteFile(ctx context.Context, key, path string) error {
	m, err := o.store(ctx)
	if err != nil {
		return err
	}
	return m.DeleteFile(ctx, key, path)
}

func (o of) Remove(ctx context.Context, key string) error {
	m, err := o.store(ctx)
	if err != nil {
		return err
	}
	return m.Remove(ctx, key)
}

func (o of) List(ctx context.Context) ([]Record, error) {
	m, err := o.store(ctx)
	if err != nil {
		return nil, err
	}
	return m.List(ctx)
}

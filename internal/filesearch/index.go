// Package filesearch keeps a project root indexed in a File Search store
// of the Gemini API, for roots too big to send as file context.
//
// There is one store per project root and caller scope, never shared
// between scopes (callers who could not read the same files). The files
// are those file context would send: Indexer walks the root with
// package filectx's scan (the sandbox, .gitignore files, excluded and
// binary files, credential files by name, the size limit) and withholds
// the secrets in their text with secrets.Redact before upload.
//
// A manifest (Manifests) keeps, for each (root, scope), its store and
// each file's content hash and document. An index uploads only new and
// changed files (a changed file's old document is deleted first) and
// deletes the documents of files gone; the manifest is written as each
// file finishes, so an index cut short resumes with what is missing
// (FileManifests keeps them in the server's state directory, across
// restarts; MemoryManifests for one process); the documents of uploads
// the API finished after an index was cut, which no manifest names, are
// found by the store's count of documents and deleted. A
// store deleted behind the server's back (404) is made again with an
// empty manifest. Sweep deletes the stores unused for a TTL, and Drop one
// on request.
package filesearch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx/secrets"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/manifest"
)

// Defaults of Options.
const (
	DefaultMaxFiles      = 25_000
	DefaultMaxFileBytes  = 1 << 20
	DefaultMaxTotalBytes = 512 << 20
	DefaultConcurrency   = 4
	DefaultTTL           = 24 * time.Hour
)

// Reasons a file is left out of an index, besides filectx's.
const (
	SkipFileLimit  filectx.Reason = "file-limit"  // past Options.MaxFiles
	SkipTotalBytes filectx.Reason = "total-bytes" // past Options.MaxTotalBytes
	// SkipName is a file whose path is not UTF-8 (or past the manifest's
	// bound): the API would keep another name for it, and no manifest
	// could.
	SkipName filectx.Reason = "name"
)

// Options bound an Indexer. The zero value of a field means its default.
type Options struct {
	MaxFiles      int   // files in one store (25,000)
	MaxFileBytes  int64 // per file (1 MiB)
	MaxTotalBytes int64 // of the files of one store together (512 MiB)
	Concurrency   int   // uploads at once (4)
	// TTL is how long a store is kept after its last use (24h).
	TTL time.Duration
	// Forbidden are paths never indexed (the server's own state).
	Forbidden []string
	Now       func() time.Time
	Log       *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.MaxFiles <= 0 {
		o.MaxFiles = DefaultMaxFiles
	}
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = DefaultMaxFileBytes
	}
	if o.MaxTotalBytes <= 0 {
		o.MaxTotalBytes = DefaultMaxTotalBytes
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return o
}

// Indexer keeps project roots indexed. It is safe for concurrent use; the
// calls on one (root, scope) run one at a time.
type Indexer struct {
	remote    Remote
	manifests Manifests
	opts      Options
	locks     sync.Map // key → chan struct{} (capacity 1)
}

// New returns an Indexer over remote, keeping its manifests in m.
func New(remote Remote, m Manifests, opts Options) *Indexer {
	return &Indexer{remote: remote, manifests: m, opts: opts.withDefaults()}
}

// Report says what an Index did.
type Report struct {
	Store     string
	Files     int // files in the index now
	Uploaded  int
	Unchanged int
	Deleted   int   // documents of files gone or no longer indexed
	Bytes     int64 // uploaded
	Skipped   int   // files left out, by reason in SkippedBy
	SkippedBy map[filectx.Reason]int
	// Strays are documents of the store the manifest did not name
	// (uploads finished after their index was cut), deleted.
	Strays int
	// Recreated says the store had gone (deleted behind the server's
	// back) and was made again.
	Recreated bool
}

// Key is the manifest key of a resolved root and a scope.
func Key(root, scope string) string { return root + "\x00" + scope }

func (ix *Indexer) lock(ctx context.Context, key string) (func(), error) {
	v, _ := ix.locks.LoadOrStore(key, make(chan struct{}, 1))
	ch := v.(chan struct{})
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// Index brings the store of root (an absolute path) and scope up to date
// with the files under root, making the store when there is none.
func (ix *Indexer) Index(ctx context.Context, root, scope string) (*Report, error) {
	if scope == "" {
		return nil, errors.New("file search: a caller scope is required, so that no store is shared between callers")
	}
	sb, err := filectx.NewSandbox(root, ix.opts.Forbidden)
	if err != nil {
		return nil, err
	}
	key := Key(sb.Root(), scope)
	unlock, err := ix.lock(ctx, key)
	if err != nil {
		return nil, err
	}
	defer unlock()
	scan, err := sb.ScanEntries(ctx, []string{"."}, filectx.Options{
		MaxFileBytes: ix.opts.MaxFileBytes, MaxScanEntries: 4 * ix.opts.MaxFiles, MaxSkippedListed: 1,
	})
	if err != nil {
		return nil, err
	}
	rep, err := ix.index(ctx, sb.Root(), key, scan)
	if errors.Is(err, ErrStoreGone) && ctx.Err() == nil {
		// Gone half-way: once more, on a new store.
		ix.opts.Log.Warn("file search store gone during an index; making it again", "root", sb.Root(), "err", err)
		rep, err = ix.index(ctx, sb.Root(), key, scan)
	}
	return rep, err
}

// progressKey is the context key of WithProgress's function.
type progressKey struct{}

// WithProgress returns ctx carrying f, which an Index under it calls with
// the files done of those to index: once with 0 when it knows how many,
// then as each file is done (uploaded, unchanged or skipped). f is called
// from the uploading goroutines one at a time, and must not block.
func WithProgress(ctx context.Context, f func(done, total int)) context.Context {
	return context.WithValue(ctx, progressKey{}, f)
}

func progressOf(ctx context.Context) func(done, total int) {
	if f, ok := ctx.Value(progressKey{}).(func(done, total int)); ok && f != nil {
		return f
	}
	return func(int, int) {}
}

// index is one pass of Index.
func (ix *Indexer) index(ctx context.Context, root, key string, scan *filectx.Scan) (*Report, error) {
	rep := &Report{SkippedBy: map[filectx.Reason]int{}}
	for r, n := range scan.SkippedBy {
		rep.SkippedBy[r] += n
		rep.Skipped += n
	}
	rec, err := ix.manifests.Get(ctx, key)
	if err != nil {
		return nil, err
	}
	var gone string // the store the manifest named, gone
	if rec.Store != "" {
		ok, docs, err := ix.remote.StoreExists(ctx, rec.Store)
		if err != nil {
			return nil, err
		}
		if !ok {
			ix.opts.Log.Warn("file search store gone; making it again", "store", rec.Store, "root", root)
			gone, rec.Store, rec.Files, rep.Recreated = rec.Store, "", map[string]Entry{}, true
		} else if docs != int64(len(rec.Files)) {
			if err := ix.reconcile(ctx, rec, rep); err != nil {
				return nil, err
			}
		}
	}
	if rec.Store == "" {
		if rec, err = ix.create(ctx, key, root, gone); err != nil {
			return nil, err
		}
	}
	rep.Store = rec.Store
	if err := ix.manifests.SetStore(ctx, key, rec.Store, ix.opts.Now()); err != nil {
		return nil, err
	}
	var todo []filectx.Candidate
	var total int64
	for _, c := range scan.Candidates {
		switch {
		case !utf8.ValidString(c.Rel) || len(c.Rel) > manifest.MaxPathBytes:
			rep.SkippedBy[SkipName]++
		case len(todo) >= ix.opts.MaxFiles:
			rep.SkippedBy[SkipFileLimit]++
		case total+c.Size > ix.opts.MaxTotalBytes:
			rep.SkippedBy[SkipTotalBytes]++
		default:
			total += c.Size
			todo = append(todo, c)
			continue
		}
		rep.Skipped++
	}
	progressOf(ctx)(0, len(todo))
	kept, err := ix.upload(ctx, key, rec, todo, rep)
	if err != nil {
		return rep, err
	}
	for path, e := range rec.Files {
		if kept[path] {
			continue
		}
		if err := ix.remote.DeleteDocument(ctx, e.Document); err != nil {
			return rep, err
		}
		if err := ix.manifests.DeleteFile(ctx, key, path); err != nil {
			return rep, err
		}
		rep.Deleted++
	}
	rep.Files = len(kept)
	if len(rep.SkippedBy) == 0 {
		rep.SkippedBy = nil
	}
	return rep, ix.manifests.SetStore(ctx, key, rec.Store, ix.opts.Now())
}

// create makes key's store and records it in place of gone ("" for
// none), unless another replica (sharing the manifests, not the lock)
// recorded one meanwhile: then the new store is deleted and the other's
// record returned, so that no store is left at Google that no manifest
// names and no sweep deletes. The manifest's ReplaceStore decides which
// of two at once wins.
func (ix *Indexer) create(ctx context.Context, key, root, gone string) (Record, error) {
	name, err := ix.remote.CreateStore(ctx, displayName(root))
	if err != nil {
		return Record{}, err
	}
	err = ix.manifests.ReplaceStore(ctx, key, gone, name, ix.opts.Now())
	if err == nil {
		return Record{Key: key, Store: name, Files: map[string]Entry{}}, nil
	}
	var rec Record
	if errors.Is(err, manifest.ErrStoreTaken) {
		rec, err = ix.manifests.Get(ctx, key)
		if err == nil && rec.Store == "" {
			err = fmt.Errorf("file search: this root's store was made and forgotten meanwhile; call again")
		}
		ix.opts.Log.Info("file search: this root's store was made meanwhile; using it", "store", rec.Store, "root", root, "err", err)
	}
	return rec, errors.Join(err, ix.remote.DeleteStore(context.WithoutCancel(ctx), name))
}

// reconcile deletes the documents of the store the manifest does not
// name: those of uploads that finished on the API's side after their
// index was cut, before the manifest was written. It runs when the
// store's count of documents differs from the manifest's.
func (ix *Indexer) reconcile(ctx context.Context, rec Record, rep *Report) error {
	docs, err := ix.remote.Documents(ctx, rec.Store)
	if err != nil {
		return err
	}
	known := make(map[string]bool, len(rec.Files))
	for _, e := range rec.Files {
		known[e.Document] = true
	}
	for _, d := range docs {
		if known[d.Name] || !ofStore(rec.Store, d.Name) {
			// Another store's (another caller's) is never deleted here.
			continue
		}
		if err := ix.remote.DeleteDocument(ctx, d.Name); err != nil {
			return err
		}
		rep.Strays++
	}
	if rep.Strays > 0 {
		ix.opts.Log.Info("file search: deleted documents the manifest did not name", "store", rec.Store, "count", rep.Strays)
	}
	return nil
}

// upload reads, hashes and (when new or changed) uploads the files of
// todo, Concurrency at a time, and returns the paths indexed. The first
// error stops the rest.
func (ix *Indexer) upload(ctx context.Context, key string, rec Record, todo []filectx.Candidate, rep *Report) (map[string]bool, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		mu    sync.Mutex
		kept  = make(map[string]bool, len(todo))
		first error
		wg    sync.WaitGroup
	)
	jobs := make(chan filectx.Candidate)
	progress, done := progressOf(ctx), 0
	for range ix.opts.Concurrency {
		wg.Go(func() {
			for c := range jobs {
				up, n, reason, err := ix.one(ctx, key, rec, c)
				mu.Lock()
				switch {
				case err != nil:
					if first == nil {
						first = err
						cancel(err)
					}
				case reason != "":
					rep.Skipped++
					rep.SkippedBy[reason]++
				default:
					kept[c.Rel] = true
					if up {
						rep.Uploaded++
						rep.Bytes += n
					} else {
						rep.Unchanged++
					}
				}
				if err == nil {
					done++
					progress(done, len(todo))
				}
				mu.Unlock()
			}
		})
	}
feed:
	for _, c := range todo {
		select {
		case jobs <- c:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	if first != nil {
		return nil, first
	}
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	return kept, nil
}

// one indexes one file: skipped (with the reason), unchanged, or
// uploaded (its old document deleted first, so that a cut between the
// two leaves the manifest naming a document gone, which the next index
// replaces).
func (ix *Indexer) one(ctx context.Context, key string, rec Record, c filectx.Candidate) (uploaded bool, n int64, reason filectx.Reason, err error) {
	data, reason, _ := filectx.ReadCandidate(c, ix.opts.MaxFileBytes)
	if reason != "" {
		return false, 0, reason, nil
	}
	// The hash is the file's own, so that a change in a secret is a
	// change; what is uploaded has its secrets withheld.
	sum := sha256.Sum256(data)
	hash := hex.EncodeToString(sum[:])
	old, had := rec.Files[c.Rel]
	if had && old.Hash == hash {
		return false, 0, "", nil
	}
	if had {
		if err := ix.remote.DeleteDocument(ctx, old.Document); err != nil {
			return false, 0, "", err
		}
	}
	masked, _ := secrets.Redact(c.Rel, strings.ToValidUTF8(string(data), "\uFFFD"))
	doc, err := ix.remote.Upload(ctx, rec.Store, Doc{Path: c.Rel, Hash: hash}, []byte(masked))
	if err != nil {
		return false, 0, "", err
	}
	if err := ix.manifests.PutFile(ctx, key, c.Rel, Entry{Hash: hash, Document: doc}); err != nil {
		return false, 0, "", err
	}
	return true, int64(len(masked)), "", nil
}

// displayName names a root's store for a person looking at the project's
// stores: the root's last element, not the scope.
func displayName(root string) string {
	name := "gemini-mcp-server " + filepath.Base(root)
	if len(name) > 120 {
		name = name[:120]
	}
	return strings.ToValidUTF8(name, "")
}

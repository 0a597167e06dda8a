package filectx

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx/secrets"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/pathx"
)

// Bounds of a scan that no flag sets (the request limits' defaults are
// config's).
const (
	// DefaultMaxScanEntries bounds a directory walk, so that naming a huge
	// tree (a home directory) costs a bounded time; it is not in the specification.
	DefaultMaxScanEntries = 50_000
	// DefaultMaxSkippedListed bounds the skipped list of a Result.
	DefaultMaxSkippedListed = 100
)

// Options are the limits and hooks of a request. The zero value of a field
// means its default.
type Options struct {
	MaxFileBytes     int64 // per file (10 MB)
	MaxFiles         int   // files sent per request (50)
	MaxTokens        int   // token budget of the files together (1M)
	MaxScanEntries   int   // directory entries a scan looks at (50,000)
	MaxSkippedListed int   // skipped files listed in a Result (100); the rest are counted
	// Media takes the images, PDFs, audio and video a request names as
	// files (see SniffMedia): for a backend that sends them to Gemini (the
	// API backend). Without it they are skipped as binary.
	Media bool
	// MaxMediaBytes bounds the bytes of the media files of one request
	// together (100 MiB).
	MaxMediaBytes int64
	// SendSecretFiles sends the files secrets.CredentialFile names (.env,
	// private keys…), which are skipped otherwise (reason secret-file).
	// The secrets in what is sent are withheld either way.
	SendSecretFiles bool
	// Counter counts the tokens of a rendered file; Estimate when nil.
	Counter func(text string) (int, error)
}

func (o Options) withDefaults() Options {
	if o.MaxFileBytes <= 0 {
		o.MaxFileBytes = config.DefaultMaxFileBytes
	}
	if o.MaxFiles <= 0 {
		o.MaxFiles = config.DefaultMaxFiles
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = config.DefaultMaxContextTokens
	}
	if o.MaxMediaBytes <= 0 {
		o.MaxMediaBytes = config.DefaultMaxMediaBytes
	}
	if o.MaxScanEntries <= 0 {
		o.MaxScanEntries = DefaultMaxScanEntries
	}
	if o.MaxSkippedListed <= 0 {
		o.MaxSkippedListed = DefaultMaxSkippedListed
	}
	if o.Counter == nil {
		o.Counter = Estimate
	}
	return o
}

// Estimate counts about one token per 4 bytes, for backends that cannot
// count.
func Estimate(text string) (int, error) { return (len(text) + 3) / 4, nil }

// Reason says why a file was not sent.
type Reason string

// The reasons a file is skipped.
const (
	SkipBudget    Reason = "budget"      // it did not fit in the token budget
	SkipBinary    Reason = "binary"      // a binary extension, or NUL bytes
	SkipIgnored   Reason = "ignored"     // a .gitignore pattern
	SkipExcluded  Reason = "excluded"    // a generated or vendored directory
	SkipTooLarge  Reason = "too-large"   // over the per-file limit
	SkipDuplicate Reason = "duplicate"   // already sent in this conversation, unchanged
	SkipFileLimit Reason = "file-limit"  // past the number of files per request
	SkipScanLimit Reason = "scan-limit"  // the scan stopped at its entry limit
	SkipSymlink   Reason = "symlink"     // a link to a directory, not followed
	SkipOutside   Reason = "outside"     // a link leading outside the root
	SkipForbidden Reason = "forbidden"   // the server's own state
	SkipSpecial   Reason = "special"     // a device file, socket or FIFO
	SkipError     Reason = "unreadable"  // the file system refused it
	SkipSecret    Reason = "secret-file" // a credential file by its name (.env, id_ed25519…)
)

// Skipped is a file (or directory) that was not sent, and why.
type Skipped struct {
	Path   string `json:"path"`
	Reason Reason `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

// Candidate is a file a scan found, not yet read.
type Candidate struct {
	Path  string // absolute, resolved
	Rel   string // relative to the root, slash-separated
	Size  int64
	Class Class
	entry int // index of the entry that brought it
	// info is the file as the scan found it, so that a read opens that
	// file and no other swapped in since (nil: any regular file).
	info fs.FileInfo
}

// Scan is the outcome of walking the entries: the candidates in priority
// order and what was left out on the way (at most MaxSkippedListed of
// them listed, all of them counted, so that a tree of many ignored files
// costs no memory for them).
type Scan struct {
	Root       string
	Candidates []Candidate
	// Media are the media files named as entries (Options.Media), in
	// their order; MIMEType is what their first bytes said at the scan.
	Media        []MediaCandidate
	Skipped      []Skipped
	SkippedTotal int
	SkippedBy    map[Reason]int
}

// ScanEntries resolves and walks the files entries. It fails with an
// *Error for a refused entry (nothing is read then), for more named files
// than opts.MaxFiles and for a named file over opts.MaxFileBytes.
func (s *Sandbox) ScanEntries(ctx context.Context, entries []string, opts Options) (*Scan, error) {
	opts = opts.withDefaults()
	if len(entries) > opts.MaxFiles {
		return nil, validationError("", "%d files entries were given; the limit is %d files per request: name fewer files, or a directory (its files are prioritised and packed into the budget)", len(entries), opts.MaxFiles)
	}
	// Every entry is checked before any directory is walked: one refused
	// entry refuses the call.
	resolved := make([]Resolved, 0, len(entries))
	media := map[int]string{} // entry index → MIME type
	var mediaBytes int64
	for i, e := range entries {
		r, err := s.Resolve(e)
		if err != nil {
			return nil, err
		}
		if r.Info.Mode().IsRegular() {
			_, secret := secretFile(opts, r.Path, r.Rel)
			switch {
			case secret:
				// A named credential file is skipped, not refused.
			case opts.Media:
				// Named files are told by their content.
				mime, err := namedMedia(e, r, opts)
				if err != nil {
					return nil, err
				}
				if mime != "" {
					if mediaBytes += r.Info.Size(); mediaBytes > opts.MaxMediaBytes {
						return nil, validationError(e, "the media files named come to more than %d bytes, the limit of "+
							"one request (--max-media-bytes): name fewer or smaller ones", opts.MaxMediaBytes)
					}
					media[i] = mime
				} else if r.Info.Size() > opts.MaxFileBytes {
					return nil, validationError(e, "the file %q is %d bytes; the limit is %d bytes per file: name a smaller file or a part of it", r.Rel, r.Info.Size(), opts.MaxFileBytes)
				}
			default:
				if mime, ok := sniffNamed(r.Path); ok {
					return nil, validationError(e, "the file %q is %s: images, PDFs, audio and video are sent to Gemini by the "+
						"API backend only (--backend api); this server's backend sends text files (the Gemini CLI reads such a "+
						"file itself when the prompt names it as @path)", r.Rel, mime)
				}
				if !binaryName(r.Path) && r.Info.Size() > opts.MaxFileBytes {
					// A named binary of another kind is skipped, not
					// refused: the call still makes sense without it.
					return nil, validationError(e, "the file %q is %d bytes; the limit is %d bytes per file: name a smaller file or a part of it", r.Rel, r.Info.Size(), opts.MaxFileBytes)
				}
			}
		}
		resolved = append(resolved, r)
	}
	sc := &Scan{Root: s.root, SkippedBy: map[Reason]int{}}
	w := &walker{s: s, opts: opts, scan: sc, seen: map[string]bool{}}
	for i, r := range resolved {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if mime, ok := media[i]; ok {
			if !w.seen[r.Path] {
				w.seen[r.Path] = true
				sc.Media = append(sc.Media, MediaCandidate{Candidate: Candidate{Path: r.Path, Rel: r.Rel, Size: r.Info.Size(), Class: ClassOther, entry: i, info: r.Info}, MIMEType: mime})
			}
			continue
		}
		if !r.Info.IsDir() {
			w.addFile(r.Path, r.Rel, r.Info, i)
			continue
		}
		if err := w.walk(ctx, r.Path, r.Rel, s.stackFor(r.Rel), i, true); err != nil {
			return nil, err
		}
	}
	sort.SliceStable(sc.Candidates, func(a, b int) bool {
		ca, cb := sc.Candidates[a], sc.Candidates[b]
		if ca.Class != cb.Class {
			return ca.Class < cb.Class
		}
		if ca.entry != cb.entry {
			return ca.entry < cb.entry
		}
		return ca.Rel < cb.Rel
	})
	return sc, nil
}

// stackFor loads the .gitignore files from the root down to the parent of
// rel, so that a scan starting below the root honours them.
func (s *Sandbox) stackFor(rel string) ignoreStack {
	var st ignoreStack
	if rel == "." {
		return st
	}
	st = st.withDir(s.root, ".")
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		d := strings.Join(parts[:i], "/")
		st = st.withDir(filepath.Join(s.root, filepath.FromSlash(d)), d)
	}
	return st
}

type walker struct {
	s       *Sandbox
	opts    Options
	scan    *Scan
	seen    map[string]bool // resolved paths already taken
	entries int
	stopped bool
}

func (w *walker) skip(rel string, r Reason, detail string) {
	w.scan.SkippedTotal++
	w.scan.SkippedBy[r]++
	if len(w.scan.Skipped) < w.opts.MaxSkippedListed {
		w.scan.Skipped = append(w.scan.Skipped, Skipped{Path: rel, Reason: r, Detail: detail})
	}
}

func (w *walker) addFile(abs, rel string, info fs.FileInfo, entry int) {
	if w.seen[abs] {
		return
	}
	w.seen[abs] = true
	if why, secret := secretFile(w.opts, abs, rel); secret {
		w.skip(rel, SkipSecret, why+"; not sent unless the server runs with --send-secret-files")
		return
	}
	switch {
	case binaryName(abs) && w.opts.Media && isMediaName(abs):
		w.skip(rel, SkipBinary, "a media file by its name (an image, PDF, audio or video), which is sent only when "+
			"named in files itself, not found in a directory")
	case binaryName(abs):
		w.skip(rel, SkipBinary, "binary file extension")
	case info.Size() > w.opts.MaxFileBytes:
		w.skip(rel, SkipTooLarge, fmt.Sprintf("%d bytes, the limit is %d", info.Size(), w.opts.MaxFileBytes))
	default:
		w.scan.Candidates = append(w.scan.Candidates, Candidate{Path: abs, Rel: rel, Size: info.Size(), Class: Classify(rel), entry: entry, info: info})
	}
}

// secretFile reports whether a file is a credential file that is not to
// be sent, by the name it was found under (rel) or the one a link leads
// to (abs), so that a link named notes.txt does not send a .env.
func secretFile(opts Options, abs, rel string) (string, bool) {
	if opts.SendSecretFiles {
		return "", false
	}
	if why, ok := secrets.CredentialFile(rel); ok {
		return why, true
	}
	return secrets.CredentialFile(filepath.ToSlash(abs))
}

// walk visits dir (resolved, inside the root) in name order.
func (w *walker) walk(ctx context.Context, abs, rel string, st ignoreStack, entry int, top bool) error {
	if w.stopped {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	st = st.withDir(abs, rel)
	des, err := os.ReadDir(abs)
	if err != nil {
		if top {
			return systemError(rel, err, "the directory %q cannot be read: %v; check its permissions", rel, err)
		}
		w.skip(rel, SkipError, err.Error())
		return nil
	}
	for _, de := range des {
		w.entries++
		name := de.Name()
		childRel := name
		if rel != "." {
			childRel = rel + "/" + name
		}
		if w.entries > w.opts.MaxScanEntries {
			w.stopped = true
			w.skip(childRel, SkipScanLimit, fmt.Sprintf("the scan stopped after %d entries: name smaller directories", w.opts.MaxScanEntries))
			return nil
		}
		childAbs := filepath.Join(abs, name)
		typ := de.Type()
		if w.s.forbiddenPath(childAbs) {
			w.skip(childRel, SkipForbidden, "this server's own state")
			continue
		}
		switch {
		case typ.IsDir():
			if vcsDirs[strings.ToLower(name)] {
				continue
			}
			if excludedDirs[strings.ToLower(name)] {
				w.skip(childRel, SkipExcluded, "generated or vendored directory")
				continue
			}
			if st.ignored(childRel, true) {
				w.skip(childRel, SkipIgnored, ".gitignore")
				continue
			}
			if err := w.walk(ctx, childAbs, childRel, st, entry, false); err != nil {
				return err
			}
		case typ&fs.ModeSymlink != 0:
			if st.ignored(childRel, false) {
				w.skip(childRel, SkipIgnored, ".gitignore")
				continue
			}
			w.link(childAbs, childRel, entry)
		case typ.IsRegular():
			if st.ignored(childRel, false) {
				w.skip(childRel, SkipIgnored, ".gitignore")
				continue
			}
			info, err := de.Info()
			if err != nil {
				w.skip(childRel, SkipError, err.Error())
				continue
			}
			w.addFile(childAbs, childRel, info, entry)
		default:
			w.skip(childRel, SkipSpecial, modeName(typ))
		}
	}
	return nil
}

// link takes a symbolic link met in a walk: a link to a regular file
// inside the root is sent under the link's path; anything else is skipped.
func (w *walker) link(abs, rel string, entry int) {
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		w.skip(rel, SkipError, "a broken symbolic link")
		return
	}
	if !pathx.Within(w.s.root, real) {
		w.skip(rel, SkipOutside, "a symbolic link leading outside the project root")
		return
	}
	if w.s.forbiddenPath(real) {
		w.skip(rel, SkipForbidden, "a symbolic link into this server's own state")
		return
	}
	info, err := os.Stat(real)
	switch {
	case err != nil:
		w.skip(rel, SkipError, err.Error())
	case info.IsDir():
		w.skip(rel, SkipSymlink, "a symbolic link to a directory, not followed")
	case !info.Mode().IsRegular():
		w.skip(rel, SkipSpecial, modeName(info.Mode()))
	default:
		w.addFile(real, rel, info, entry)
	}
}

// Package imagesave writes an image Gemini made into the project root: only
// to a path inside it, only once the user has said yes, never over an
// existing file without a second, explicit yes, and atomically (a temporary
// file in the same directory, renamed into place, removed on any failure).
//
// The sandbox rules are those of file context (internal/filectx): a path
// is taken against the root, and one that leaves it, by "..", by an
// absolute path elsewhere or through a symbolic link, is refused before
// anything is asked or written. The writes themselves go through an
// os.Root opened on the project root, so that a link swapped in between
// the check and the write cannot lead them outside it either.
package imagesave

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/pathx"
)

// MaxBytes is the largest image that is saved.
const MaxBytes = 32 << 20

// The longest path and file name saved to: Linux's PATH_MAX and
// NAME_MAX, which most file systems share. A longer one is refused
// before anything runs, rather than failing the save after the turn with
// the system's error quoting it whole.
const (
	maxPathBytes = 4096
	maxNameBytes = 255
)

// Field is the tool argument a refused path is reported against.
const Field = "save_to"

// FileMode is the mode of a saved image.
const FileMode fs.FileMode = 0o644

// ErrDeclined is the cause of the error of a save the user said no to
// (or could not be asked about); nothing was written.
var ErrDeclined = errors.New("the user did not confirm the save")

// Confirm asks the user a yes-or-no question (the tool backs it with MCP
// elicitation). It returns false with a nil error for a no, and an error
// when the user could not be asked.
type Confirm func(ctx context.Context, question string) (bool, error)

// Request is one image to save.
type Request struct {
	// Root is the project root, an absolute path of a directory.
	Root string
	// Forbidden are paths under which nothing is written (the server's
	// own state directory).
	Forbidden []string
	// Path is where to save, as the caller wrote it: relative to Root, or
	// absolute inside it. Without an extension, the MIME type's is added;
	// with one, it must be the MIME type's.
	Path     string
	MIMEType string
	Data     []byte
}

// Saved is a saved image.
type Saved struct {
	Path     string // absolute, inside the resolved root
	Rel      string // relative to the root, slash-separated
	Bytes    int
	Replaced bool // an existing file was replaced, with the user's second yes
}

// extensions are the extensions of each image type that is saved, the
// first one the one added to a path without any.
var extensions = map[string][]string{
	"image/png":  {".png"},
	"image/jpeg": {".jpg", ".jpeg"},
	"image/webp": {".webp"},
	"image/gif":  {".gif"},
	"image/heic": {".heic"},
	"image/heif": {".heif"},
}

// Save asks the user, through confirm, whether to write r's image to
// r.Path in the project root, and writes it if they say yes. An existing
// file is only replaced after a second question. Its errors are
// *filectx.Error: CategoryValidation for a bad path, type or size, and
// for a no (matching ErrDeclined); CategorySecurity for a path outside the
// root or into the server's state; CategorySystem when the file system
// fails. Nothing is left behind by a failed save.
func Save(ctx context.Context, r Request, confirm Confirm) (*Saved, error) {
	saved, errs := SaveAll(ctx, []Request{r}, confirm)
	return saved[0], errs[0]
}

// place checks r and looks at what its path holds: replace is true when
// it is a regular file, which only a second yes replaces.
func place(r Request) (t target, replace bool, err error) {
	if t, err = check(r); err != nil {
		return t, false, err
	}
	root, err := os.OpenRoot(t.root)
	if err != nil {
		return t, false, sysErr(r.Path, err, "the project root %s cannot be opened: %v", t.root, err)
	}
	defer root.Close()
	switch info, err := root.Lstat(t.rel); {
	case err == nil && info.Mode().IsRegular():
		return t, true, nil
	case err == nil:
		return t, false, secErr(r.Path, "%s already exists and is not a regular file (%s): name another path", t.shown, info.Mode().Type())
	case !errors.Is(err, fs.ErrNotExist):
		return t, false, sysErr(r.Path, err, "%s cannot be checked: %v", t.shown, err)
	}
	return t, false, nil
}

// save writes r's image to t, which the user agreed to (and to replace,
// when replace).
func save(ctx context.Context, r Request, t target, replace bool) (*Saved, error) {
	if err := ctx.Err(); err != nil {
		return nil, declined(r.Path, "the image was not saved: the call ended before the write (%v)", err)
	}
	root, err := os.OpenRoot(t.root)
	if err != nil {
		return nil, sysErr(r.Path, err, "the project root %s cannot be opened: %v", t.root, err)
	}
	defer root.Close()
	if err := write(root, t, r.Data, replace); err != nil {
		return nil, err
	}
	return &Saved{Path: filepath.Join(t.root, t.rel), Rel: t.slash, Bytes: len(r.Data), Replaced: replace}, nil
}

// Check refuses, with Save's errors, a request Save would refuse before
// asking anything (a bad path, type or size), so that a tool can refuse
// its save_to before Gemini runs. It asks nothing and writes nothing.
func Check(r Request) error {
	_, err := check(r)
	return err
}

// TypeOf is the image type p's extension names, image/png (what Gemini's
// image models make) for a path without one or with another.
func TypeOf(p string) string {
	ext := strings.ToLower(filepath.Ext(p))
	for t, exts := range extensions {
		if has(exts, ext) {
			return t
		}
	}
	return "image/png"
}

// target is a checked path to save to.
type target struct {
	root  string // resolved project root
	rel   string // relative to root, in the system's separators
	slash string // rel, slash-separated
	shown string // the path as written, clipped, quoted, for messages
	entry string
}

// check refuses a request that cannot be saved, before anything is asked.
func check(r Request) (target, error) {
	shown := fmt.Sprintf("%q", msg.Clip(r.Path, 200))
	t := target{shown: shown, entry: r.Path}
	exts, ok := extensions[strings.ToLower(r.MIMEType)]
	switch {
	case !ok:
		return t, valErr(r.Path, "an image of type %q cannot be saved: only PNG, JPEG, WebP, GIF, HEIC and HEIF are", msg.Clip(r.MIMEType, 100))
	case len(r.Data) == 0:
		return t, valErr(r.Path, "the image is empty: nothing to save")
	case len(r.Data) > MaxBytes:
		return t, valErr(r.Path, "the image is %d bytes, over the %d bytes this server saves", len(r.Data), MaxBytes)
	case strings.TrimSpace(r.Path) == "" || strings.HasSuffix(r.Path, "/") || strings.HasSuffix(r.Path, string(filepath.Separator)):
		return t, valErr(r.Path, "%s names no file: give a file name inside the project root, such as images/out%s", shown, exts[0])
	case strings.IndexByte(r.Path, 0) >= 0:
		return t, valErr(r.Path, "%s holds a NUL byte: give a file name inside the project root", shown)
	case len(r.Path) > maxPathBytes:
		return t, valErr(r.Path, "%s is %d bytes long, more than the %d of a path a file system takes: give a shorter one", shown, len(r.Path), maxPathBytes)
	case nameBytes(r.Path, exts[0]) > maxNameBytes:
		return t, valErr(r.Path, "%s has a file name of %d bytes, more than the %d a file system takes (with its extension): give a shorter one",
			shown, len(filepath.Base(r.Path)), maxNameBytes)
	}
	sb, err := filectx.NewSandbox(r.Root, r.Forbidden)
	if err != nil {
		return t, err
	}
	t.root = sb.Root()
	p := r.Path
	if !filepath.IsAbs(p) {
		p = filepath.Join(t.root, p)
	}
	p = filepath.Clean(p)
	if ext := strings.ToLower(filepath.Ext(p)); ext == "" {
		p += exts[0]
	} else if !has(exts, ext) {
		return t, valErr(r.Path, "%s ends in %s, but the image is %s: name it with %s", shown, ext, r.MIMEType, strings.Join(exts, " or "))
	}
	if !pathx.Within(t.root, p) || p == t.root {
		return t, secErr(r.Path, "%s is outside the project root %s: images are only saved inside it (relative paths are taken against the root)", shown, t.root)
	}
	if forbidden(r.Forbidden, p) {
		return t, secErr(r.Path, "%s is inside this server's own state directory: save the image among your project's files", shown)
	}
	dir, err := filepath.EvalSymlinks(filepath.Dir(p))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return t, valErr(r.Path, "the directory of %s does not exist under the project root %s: name an existing directory", shown, t.root)
	case err != nil:
		return t, sysErr(r.Path, err, "the directory of %s cannot be resolved: %v", shown, err)
	case !pathx.Within(t.root, dir):
		return t, secErr(r.Path, "%s leads through a symbolic link to %s, outside the project root %s: images are only saved inside it", shown, dir, t.root)
	case forbidden(r.Forbidden, dir):
		return t, secErr(r.Path, "%s leads into this server's own state directory: save the image among your project's files", shown)
	}
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return t, valErr(r.Path, "the directory of %s is not a directory: name an existing directory", shown)
	}
	p = filepath.Join(dir, filepath.Base(p))
	if t.rel, err = filepath.Rel(t.root, p); err != nil {
		return t, sysErr(r.Path, err, "%s cannot be placed in the project root: %v", shown, err)
	}
	t.slash = path.Clean(filepath.ToSlash(t.rel))
	return t, nil
}

// ask puts one question to the user; anything but a yes is an error.
func ask(ctx context.Context, confirm Confirm, q, entry string) error {
	ok, err := confirm(ctx, q)
	if err != nil {
		return declined(entry, "the image was not saved: the user could not be asked to confirm (%v)", err)
	}
	if !ok {
		return declined(entry, "the image was not saved: the user said no")
	}
	return nil
}

// write writes data to a temporary file beside the target and renames it
// into place; the temporary file is gone whatever happens.
func write(root *os.Root, t target, data []byte, replace bool) (err error) {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(filepath.Dir(t.rel), "."+filepath.Base(t.rel)+".tmp-"+hex.EncodeToString(rnd[:]))
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, FileMode)
	if err != nil {
		return sysErr(t.entry, err, "the image could not be written beside %s: %v", t.shown, err)
	}
	defer func() {
		if err != nil {
			_ = root.Remove(tmp)
		}
	}()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(FileMode) // whatever the umask
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return sysErr(t.entry, err, "the image could not be written beside %s: %v", t.shown, err)
	}
	// Not replacing: a file that appeared at the path since it was checked
	// is not overwritten.
	if info, lerr := root.Lstat(t.rel); lerr == nil && (!replace || !info.Mode().IsRegular()) {
		return secErrCause(t.entry, fs.ErrExist, "%s appeared while the user was asked, and was left as it is: save again to decide about it", t.shown)
	}
	if err = root.Rename(tmp, t.rel); err != nil {
		return sysErr(t.entry, err, "the image could not be put in place as %s: %v", t.shown, err)
	}
	return nil
}

// nameBytes is the length of p's file name once saved: with ext when it
// has no extension.
func nameBytes(p, ext string) int {
	base := filepath.Base(p)
	if filepath.Ext(base) == "" {
		return len(base) + len(ext)
	}
	return len(base)
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func forbidden(list []string, p string) bool {
	for _, f := range list {
		if f == "" {
			continue
		}
		if pathx.Within(filepath.Clean(f), p) {
			return true
		}
		if rf, err := filepath.EvalSymlinks(f); err == nil && pathx.Within(rf, p) {
			return true
		}
	}
	return false
}

func valErr(entry, format string, args ...any) error {
	return &filectx.Error{Category: filectx.CategoryValidation, Field: Field, Entry: entry, Message: fmt.Sprintf(format, args...)}
}

func secErr(entry, format string, args ...any) error {
	return secErrCause(entry, nil, format, args...)
}

func secErrCause(entry string, cause error, format string, args ...any) error {
	return &filectx.Error{Category: filectx.CategorySecurity, Field: Field, Entry: entry, Err: cause, Message: fmt.Sprintf(format, args...)}
}

func sysErr(entry string, err error, format string, args ...any) error {
	return &filectx.Error{Category: filectx.CategorySystem, Field: Field, Entry: entry, Err: err, Message: fmt.Sprintf(format, args...)}
}

func declined(entry, format string, args ...any) error {
	return &filectx.Error{Category: filectx.CategoryValidation, Field: Field, Entry: entry, Err: ErrDeclined, Message: fmt.Sprintf(format, args...)}
}

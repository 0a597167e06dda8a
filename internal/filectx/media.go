package filectx

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

// Media files: images, PDFs, audio and video, which the Gemini API reads
// itself. Their type is told by their content (SniffMedia), never by their
// name: a screenshot named notes.txt is an image, a text named photo.png
// is text.

// SniffLen is how many leading bytes SniffMedia needs.
const SniffLen = 512

// MediaTypes are the MIME types SniffMedia returns: the types of the
// Gemini API's image, document, audio and video understanding.
var MediaTypes = []string{
	"image/png", "image/jpeg", "image/webp", "image/heic", "image/heif",
	"application/pdf",
	"audio/wav", "audio/mp3", "audio/aac", "audio/ogg", "audio/flac", "audio/aiff",
	"video/mp4", "video/mov", "video/webm", "video/avi", "video/mpeg", "video/x-flv", "video/wmv", "video/3gpp",
}

// SniffMedia returns the MIME type of a media file Gemini reads from its
// first bytes (at least SniffLen of them, or the whole file), and ok; or,
// for other content, ok false and what the content looks like
// (net/http.DetectContentType's answer, e.g. "application/zip", or
// "text/plain; charset=utf-8" for text), to name it in an error.
func SniffMedia(head []byte) (mime string, ok bool) {
	h := head
	has := func(off int, magic string) bool {
		return len(h) >= off+len(magic) && string(h[off:off+len(magic)]) == magic
	}
	switch {
	case has(0, "\x89PNG\r\n\x1a\n"):
		return "image/png", true
	case has(0, "\xff\xd8\xff"):
		return "image/jpeg", true
	case has(0, "RIFF") && has(8, "WEBP"):
		return "image/webp", true
	case has(0, "RIFF") && has(8, "WAVE"):
		return "audio/wav", true
	case has(0, "RIFF") && has(8, "AVI "):
		return "video/avi", true
	case has(0, "%PDF-"):
		return "application/pdf", true
	case has(0, "fLaC"):
		return "audio/flac", true
	case has(0, "OggS"):
		return "audio/ogg", true
	case has(0, "FORM") && (has(8, "AIFF") || has(8, "AIFC")):
		return "audio/aiff", true
	case has(0, "ID3"):
		return "audio/mp3", true
	case has(0, "FLV\x01"):
		return "video/x-flv", true
	case has(0, "\x30\x26\xb2\x75\x8e\x66\xcf\x11"):
		return "video/wmv", true
	case has(0, "\x00\x00\x01\xba"), has(0, "\x00\x00\x01\xb3"):
		return "video/mpeg", true
	case has(0, "\x1a\x45\xdf\xa3"):
		// Matroska; WebM is the Matroska whose DocType says so.
		if bytes.Contains(h[:min(len(h), 64)], []byte("webm")) {
			return "video/webm", true
		}
		return "video/x-matroska", false
	case has(4, "ftyp") && len(h) >= 12:
		return isoMedia(string(h[8:12]))
	case len(h) >= 2 && h[0] == 0xff && h[1]&0xf6 == 0xf0:
		// An ADTS frame: sync word, layer 00.
		return "audio/aac", true
	case len(h) >= 2 && h[0] == 0xff && h[1]&0xe0 == 0xe0 && (h[1]>>1)&3 != 0 && (h[1]>>3)&3 != 1:
		// An MPEG audio frame without an ID3 tag: sync word, a layer, a
		// valid version.
		return "audio/mp3", true
	}
	return http.DetectContentType(head), false
}

// isoMedia is the MIME type of an ISO base media file (the ftyp box) by
// its major brand.
func isoMedia(brand string) (string, bool) {
	switch {
	case brand == "heic", brand == "heix", brand == "hevc", brand == "hevx", brand == "heim", brand == "heis":
		return "image/heic", true
	case brand == "mif1", brand == "msf1":
		return "image/heif", true
	case brand == "qt  ":
		return "video/mov", true
	case strings.HasPrefix(brand, "3g"):
		return "video/3gpp", true
	case brand == "M4A ", brand == "M4B ", brand == "M4P ":
		// MPEG-4 audio, which the API does not list.
		return "audio/mp4", false
	case brand == "avif", brand == "avis", brand == "crx ":
		return "image/" + strings.TrimSpace(brand), false
	}
	return "video/mp4", true
}

// isMediaName reports whether a file name's extension is one of a media
// type Gemini reads, so that a directory walk says "name it" rather than
// "binary".
func isMediaName(name string) bool {
	switch strings.ToLower(name[strings.LastIndexByte(name, '.')+1:]) {
	case "png", "jpg", "jpeg", "webp", "heic", "heif", "pdf", "wav", "mp3", "aac", "ogg", "oga", "flac",
		"aif", "aiff", "mp4", "mov", "webm", "avi", "mpeg", "mpg", "flv", "wmv", "3gp":
		return true
	}
	return false
}

// MediaCandidate is a media file named as an entry, not yet read.
type MediaCandidate struct {
	Candidate
	MIMEType string
}

// MediaFile is a media file packed for a request.
type MediaFile struct {
	Path     string // relative to the root, slash-separated
	Abs      string // the file read
	MIMEType string
	Data     []byte
	Hash     string // SHA-256, hex
}

// mediaKinds names the media Gemini reads, for errors.
const mediaKinds = "images (PNG, JPEG, WebP, HEIC, HEIF), PDF, audio (WAV, MP3, AAC, OGG, FLAC, AIFF) and " +
	"video (MP4, MOV, WebM, AVI, MPEG, FLV, WMV, 3GPP)"

// namedMedia tells a named file by its first bytes: its MIME type when it
// is media Gemini reads, "" when it is text, and an error for other binary
// content (an archive, an executable, a GIF), which the request cannot
// mean to send as text.
func namedMedia(entry string, r Resolved, _ Options) (string, error) {
	f, err := os.Open(r.Path)
	if err != nil {
		return "", systemError(entry, err, "the file %q cannot be read: %v; check its permissions", r.Rel, err)
	}
	defer f.Close()
	head := make([]byte, 8<<10)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return "", systemError(entry, err, "the file %q cannot be read: %v", r.Rel, err)
	}
	head = head[:n]
	mime, ok := SniffMedia(head)
	if ok {
		return mime, nil
	}
	if IsBinary(head) || !strings.HasPrefix(mime, "text/") {
		return "", validationError(entry, "the file %q is binary (its content looks like %s), of no type Gemini reads; "+
			"files are sent as text, or as media when they are %s: name another file", r.Rel, strings.SplitN(mime, ";", 2)[0], mediaKinds)
	}
	return "", nil
}

// readMedia reads a media candidate whole (at most max bytes), checking
// that it is still media of the same type.
func readMedia(c MediaCandidate, max int64) ([]byte, Reason, string) {
	data, reason, why := readCapped(c.Candidate, max)
	if reason != "" {
		if reason == SkipTooLarge {
			why = fmt.Sprintf("the media files come to more than %d bytes (--max-media-bytes)", max)
		}
		return nil, reason, why
	}
	if mime, ok := SniffMedia(data[:min(len(data), SniffLen)]); !ok || mime != c.MIMEType {
		return nil, SkipError, "the file changed while it was read"
	}
	return data, "", ""
}

// sniffNamed says whether the file at path is media, by its first bytes;
// a file that cannot be read is not (the read that follows says why).
func sniffNamed(path string) (string, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", false
	}
	defer f.Close()
	head := make([]byte, SniffLen)
	n, _ := io.ReadFull(f, head)
	return SniffMedia(head[:n])
}

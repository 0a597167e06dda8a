package api

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
)

// Media files (images, PDFs, audio, video) go with the prompt as parts of
// their own. While the request stays within Options.MaxInlineBytes (the
// API's limit on a request), as inlineData; past it, through the Files
// API: uploaded once per content (SHA-256) and session, reused by the
// session's later turns, deleted with the session (see resources.go).

const (
	// inlineMargin is kept free of inline data in a request, for what
	// the estimate of its size leaves out (tools, JSON framing).
	inlineMargin = 64 << 10
	// maxActiveWait bounds the wait for an uploaded file to be ACTIVE.
	maxActiveWait = 2 * time.Minute
	// firstActivePoll is the wait before asking again about a file still
	// PROCESSING; it doubles up to maxActivePoll.
	firstActivePoll = 100 * time.Millisecond
	maxActivePoll   = 2 * time.Second
)

// mediaRef is a media file of a turn sent through the Files API, as the
// turn's record keeps it, to find it again, or upload it anew once the
// API has dropped it (after 48 hours, or deleted).
type mediaRef struct {
	Path     string `json:"path"`
	Abs      string `json:"abs"`
	MIMEType string `json:"mimeType"`
	SHA256   string `json:"sha256"`
	Size     int    `json:"size"`
	URI      string `json:"uri"`
}

// fileKey is the key of a session's uploaded file among its resources.
func fileKey(sha string) string { return "file:" + sha }

// mediaParts returns the parts that carry media after the prompt, each
// after a line naming it, inline while the request (estimated from
// contents and system) stays within the inline limit, uploaded past it;
// and the references of those uploaded, for the turn's record.
func (b *Backend) mediaParts(ctx context.Context, id string, contents []*genai.Content, system *genai.Content, media []backend.Media) (parts []*genai.Part, refs []mediaRef, err error) {
	if len(media) == 0 {
		return nil, nil, nil
	}
	budget := b.maxInline - requestSize(contents, system) - inlineMargin
	for _, m := range media {
		parts = append(parts, genai.NewPartFromText(fmt.Sprintf("--- FILE: %s (%s, %d bytes) ---", msg.QuoteName(m.Path), m.MIMEType, len(m.Data))))
		if n := base64.StdEncoding.EncodedLen(len(m.Data)) + 128; n <= budget {
			budget -= n
			parts = append(parts, genai.NewPartFromBytes(m.Data, m.MIMEType))
			continue
		}
		f, err := b.uploadOnce(ctx, id, m)
		if err != nil {
			return nil, nil, err
		}
		parts = append(parts, genai.NewPartFromURI(f.URI, f.MIMEType))
		refs = append(refs, mediaRef{Path: m.Path, Abs: m.Abs, MIMEType: m.MIMEType, SHA256: m.SHA256, Size: len(m.Data), URI: f.URI})
	}
	return parts, refs, nil
}

// requestSize estimates the bytes of a request's contents and system
// instruction as JSON.
func requestSize(contents []*genai.Content, system *genai.Content) int {
	n := 0
	for _, c := range append([]*genai.Content{system}, contents...) {
		if c == nil {
			continue
		}
		n += 32
		for _, p := range c.Parts {
			switch {
			case p.InlineData != nil:
				n += base64.StdEncoding.EncodedLen(len(p.InlineData.Data)) + 64
			case p.Text != "":
				n += len(p.Text) + len(p.Text)/8 + 16 // escapes
			default:
				if b, err := json.Marshal(p); err == nil {
					n += len(b)
				}
			}
		}
	}
	return n
}

// uploadOnce returns session id's upload of m, uploading it when the
// session has none.
func (b *Backend) uploadOnce(ctx context.Context, id string, m backend.Media) (*genai.File, error) {
	if r := b.res.get(id, fileKey(m.SHA256)); r != nil {
		if f, ok := r.value.(*genai.File); ok {
			return f, nil
		}
	}
	return b.upload(ctx, id, m.Path, m.MIMEType, m.SHA256, m.Data)
}

// upload uploads data through the Files API, waits until the API can use
// it, and records it as session id's.
func (b *Backend) upload(ctx context.Context, id, path, mime, sha string, data []byte) (f *genai.File, err error) {
	defer func() {
		// The SDK panics on some malformed answers (an upload's last
		// answer without "file").
		if v := recover(); v != nil {
			f, err = nil, newError(backend.KindBadOutput, fmt.Errorf("genai panic: %v", v), "the Gemini API's answer to "+
				"the upload of %s could not be read (%v); try again", msg.QuoteName(path), v)
		}
	}()
	b.log.Info("gemini api: uploading a media file through the Files API", "session", id, "path", path, "bytes", len(data), "mimeType", mime)
	f, err = b.client.Files.Upload(ctx, bytes.NewReader(data), &genai.UploadFileConfig{MIMEType: mime, DisplayName: displayName(path)})
	if err != nil {
		return nil, b.fileError(ctx, err, "the file %s could not be uploaded through the Gemini API's Files API", path)
	}
	if f == nil || f.Name == "" || f.URI == "" {
		return nil, newError(backend.KindBadOutput, nil, "the Gemini API's Files API answered the upload of %s without "+
			"the file's name or URI; try again", msg.QuoteName(path))
	}
	del := b.deleteFile(f.Name)
	if f, err = b.waitActive(ctx, f, path); err != nil {
		// The upload is no use: it goes at once.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resourceDeleteTimeout)
		defer cancel()
		_ = del(dctx)
		return nil, err
	}
	now := time.Now()
	b.res.put(id, fileKey(sha), &resource{kind: "file", name: f.Name, created: now, checked: now, value: f, del: del})
	return f, nil
}

// deleteFile returns the deletion of the uploaded file name; one the API
// no longer has is deleted.
func (b *Backend) deleteFile(name string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		_, err := b.client.Files.Delete(ctx, name, nil)
		if e, ok := asAPIError(err); ok && (e.Code == http.StatusNotFound || e.Code == http.StatusForbidden) {
			return nil
		}
		return err
	}
}

// displayName is the file's name for the Files API: its base name, at
// most 512 bytes.
func displayName(path string) string {
	name := path[strings.LastIndexByte(path, '/')+1:]
	if len(name) > 512 {
		name = name[:512]
	}
	return name
}

// waitActive waits until the API says f is ACTIVE (files are PROCESSING a
// while after their upload, videos most), at most maxActiveWait.
func (b *Backend) waitActive(ctx context.Context, f *genai.File, path string) (*genai.File, error) {
	deadline := time.Now().Add(maxActiveWait)
	wait := firstActivePoll
	for {
		switch f.State {
		case genai.FileStateActive, genai.FileStateUnspecified, "":
			return f, nil
		case genai.FileStateFailed:
			why := ""
			if f.Error != nil && f.Error.Message != "" {
				why = ": " + f.Error.Message
			}
			return nil, newError(backend.KindInput, nil, "the Gemini API could not process the file %s (state FAILED%s); "+
				"check that it is a valid %s", msg.QuoteName(path), why, f.MIMEType)
		}
		if time.Now().Add(wait).After(deadline) {
			return nil, newError(backend.KindTimeout, nil, "the Gemini API was still processing the file %s after %s; "+
				"try again later, or send a smaller file", msg.QuoteName(path), maxActiveWait)
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
		wait = min(2*wait, maxActivePoll)
		got, err := b.client.Files.Get(ctx, f.Name, nil)
		if err != nil {
			return nil, b.fileError(ctx, err, "the state of the file %s could not be read from the Gemini API's Files API", path)
		}
		f = got
	}
}

// fileError is the error of a Files API request about the file at path.
func (b *Backend) fileError(ctx context.Context, err error, format, path string) *backend.Error {
	if ctx.Err() != nil {
		return newError(backend.KindCancelled, ctx.Err(), format+": the call ended first", msg.QuoteName(path))
	}
	if e, ok := asAPIError(err); ok {
		be := b.apiError(ctx, e, "")
		be.Reason = fmt.Sprintf(format+": %s", msg.QuoteName(path), be.Reason)
		return be
	}
	return newError(backend.KindFailed, err, format+" (%v); check the network, and try again", msg.QuoteName(path), err)
}

// refreshFiles makes sure the files the conversation's earlier turns sent
// through the Files API are still there, before contents go out again:
// one the API no longer has (deleted, or expired 48 hours after its
// upload) is uploaded anew from the file it was read from, if that still
// has the same content; else the part becomes a note saying so.
func (b *Backend) refreshFiles(ctx context.Context, id string, contents []*genai.Content, refs map[string]mediaRef) error {
	// Each file is asked about once a turn (the API may have dropped it
	// any time), and each part that names it follows the answer.
	sent := map[string]*genai.FileData{} // URI in the history → what to send, nil: a note
	for _, c := range contents {
		for i, p := range c.Parts {
			if p == nil || p.FileData == nil {
				continue
			}
			ref, ok := refs[p.FileData.FileURI]
			if !ok {
				continue
			}
			if fd, ok := sent[ref.URI]; ok {
				if fd == nil {
					c.Parts[i] = genai.NewPartFromText(gonePart(ref, "it could not be sent again"))
				} else {
					p.FileData = fd
				}
				continue
			}
			key := fileKey(ref.SHA256)
			name := "files/" + ref.URI[strings.LastIndexByte(ref.URI, '/')+1:]
			if r := b.res.get(id, key); r != nil {
				name = r.name
			}
			f, err := b.client.Files.Get(ctx, name, nil)
			if err == nil && f != nil && (f.State == genai.FileStateActive || f.State == "") && f.URI != "" {
				now := time.Now()
				if !b.res.touch(id, key) {
					// Another process uploaded it: this one deletes it
					// when the session ends, as that one would.
					b.res.put(id, key, &resource{kind: "file", name: f.Name, created: now, checked: now, value: f, del: b.deleteFile(f.Name)})
				}
				p.FileData = &genai.FileData{FileURI: f.URI, MIMEType: p.FileData.MIMEType}
				sent[ref.URI] = p.FileData
				continue
			}
			if err != nil {
				if e, ok := asAPIError(err); !ok || e.Code != http.StatusNotFound && e.Code != http.StatusForbidden {
					return b.fileError(ctx, err, "the file %s sent earlier in this conversation could not be looked up in the Gemini API's Files API", ref.Path)
				}
			}
			// Gone (or FAILED): upload it again, if its content is the same.
			b.res.drop(id, key)
			data, why := readAgain(ref)
			if why != "" {
				b.log.Info("gemini api: a media file sent earlier is gone from the Files API and cannot be sent again", "session", id, "path", ref.Path, "why", why)
				c.Parts[i] = genai.NewPartFromText(gonePart(ref, why))
				sent[ref.URI] = nil
				continue
			}
			b.log.Info("gemini api: a media file sent earlier is gone from the Files API; uploading it again", "session", id, "path", ref.Path)
			f, err = b.upload(ctx, id, ref.Path, ref.MIMEType, ref.SHA256, data)
			if err != nil {
				return err
			}
			p.FileData = &genai.FileData{FileURI: f.URI, MIMEType: p.FileData.MIMEType}
			sent[ref.URI] = p.FileData
		}
	}
	return nil
}

// gonePart is the note that takes the place of a media file sent earlier
// that the API no longer has and that cannot be sent again.
func gonePart(ref mediaRef, why string) string {
	return fmt.Sprintf("[the file %s (%s) was sent earlier in this conversation, but the Gemini API no longer has it "+
		"and it cannot be sent again: %s]", msg.QuoteName(ref.Path), ref.MIMEType, why)
}

// readAgain reads the file a media reference was read from, or says why
// it cannot be sent again: gone, or changed (its content is sent only if
// it is what was sent before).
func readAgain(ref mediaRef) ([]byte, string) {
	if ref.Abs == "" {
		return nil, "where it was read from is not known"
	}
	f, err := os.Open(ref.Abs)
	if err != nil {
		return nil, "it can no longer be read"
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, int64(ref.Size)+1))
	if err != nil {
		return nil, "it can no longer be read"
	}
	sum := sha256.Sum256(data)
	if len(data) != ref.Size || hex.EncodeToString(sum[:]) != ref.SHA256 {
		return nil, "it has changed since; name it in files again to send it as it is now"
	}
	return data, ""
}

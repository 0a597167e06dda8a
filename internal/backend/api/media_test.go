package api

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// mediaFile writes data to a file and returns it as a turn's media.
func mediaFile(t *testing.T, dir, name, mime string, data []byte) backend.Media {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return backend.Media{Path: name, Abs: p, MIMEType: mime, Data: data, SHA256: hex.EncodeToString(sum[:])}
}

func (f *fixture) uploads() int {
	n := 0
	for _, r := range f.fake.Requests() {
		if r.Method == fakeapi.MethodUploadStart && r.Status == 200 {
			n++
		}
	}
	return n
}

// TestMediaInlineAndFilesAPI: a small image goes inline, a PDF past the
// inline limit through the Files API (waited for while PROCESSING),
// once per content in the conversation; a file the API dropped between
// turns is uploaded again from disk, or, changed on disk since, replaced
// by a note; the uploads go when the session ends, and at Close.
func TestMediaInlineAndFilesAPI(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{MaxInlineBytes: 100 << 10})
	f.fake.SetProcessingGets(2)
	dir := t.TempDir()
	png := mediaFile(t, dir, "shot.png", "image/png", append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1}, 1000)...))
	pdf := mediaFile(t, dir, "spec.pdf", "application/pdf", append([]byte("%PDF-1.7\n"), bytes.Repeat([]byte("page "), 40<<10)...))

	a := f.mustRun(backend.Turn{Prompt: "what do these show?", Media: []backend.Media{png, pdf}})
	r := f.streams()[0]
	if len(r.Media) != 2 || r.Media[0].MIMEType != "image/png" || r.Media[0].Size != len(png.Data) || r.Media[0].SHA256 != png.SHA256 ||
		r.Media[1].MIMEType != "application/pdf" || r.Media[1].FileURI == "" {
		t.Fatalf("first request's media %+v", r.Media)
	}
	if !strings.Contains(string(r.Body), `--- FILE: shot.png (image/png, 1008 bytes) ---`) {
		t.Error("the image is not named before it")
	}
	if n := f.uploads(); n != 1 {
		t.Fatalf("%d uploads, want 1", n)
	}
	files := f.fake.Files()
	if len(files) != 1 || files[0].State != "ACTIVE" || files[0].DisplayName != "spec.pdf" {
		t.Fatalf("the fake's files %+v: want spec.pdf, waited for until ACTIVE", files)
	}

	// The same PDF again: not uploaded again; the history's copy is sent.
	f.mustRun(backend.Turn{Prompt: "and page 2?", Session: a.SessionID, Media: []backend.Media{pdf}})
	r = f.streams()[1]
	if n := f.uploads(); n != 1 {
		t.Errorf("%d uploads after the second turn, want 1", n)
	}
	if len(r.Media) != 3 || r.Media[2].FileURI != r.Media[1].FileURI || r.Media[1].FileURI != files[0].URI {
		t.Errorf("second request's media %+v", r.Media)
	}

	// The API dropped it: uploaded again from the file, the turn answers.
	f.fake.ExpireFiles()
	f.restart(Options{MaxInlineBytes: 100 << 10}) // a new process, which has not seen it
	f.mustRun(backend.Turn{Prompt: "and page 3?", Session: a.SessionID})
	r = f.streams()[2]
	if n := f.uploads(); n != 2 {
		t.Errorf("%d uploads after the file expired, want 2", n)
	}
	now := f.fake.Files()
	if len(now) != 1 || len(r.Media) != 3 || r.Media[1].FileURI != now[0].URI || r.Media[2].FileURI != now[0].URI {
		t.Errorf("after expiry: files %+v, media %+v", now, r.Media)
	}

	// Dropped again, and changed on disk: a note instead of the file.
	f.fake.ExpireFiles()
	f.restart(Options{MaxInlineBytes: 100 << 10})
	if err := os.WriteFile(pdf.Abs, []byte("%PDF-1.7\nchanged"), 0o644); err != nil {
		t.Fatal(err)
	}
	f.mustRun(backend.Turn{Prompt: "and page 4?", Session: a.SessionID})
	r = f.streams()[3]
	if n := f.uploads(); n != 2 || len(r.Media) != 1 || !strings.Contains(string(r.Body), "spec.pdf (application/pdf) was sent earlier") ||
		!strings.Contains(string(r.Body), "has changed since") {
		t.Errorf("changed file: %d uploads, media %+v", n, r.Media)
	}

	// A new session's upload, then the session is deleted: a sweep
	// deletes its upload; Close deletes the rest.
	b := f.mustRun(backend.Turn{Prompt: "one more", Media: []backend.Media{mediaFile(t, dir, "b.pdf", "application/pdf", bytes.Repeat([]byte("%PDF-1.7\n"), 20<<10))}})
	c := f.mustRun(backend.Turn{Prompt: "and another", Media: []backend.Media{mediaFile(t, dir, "c.pdf", "application/pdf", bytes.Repeat([]byte("%PDF-1.4\n"), 20<<10))}})
	live := f.fake.Files()
	if len(live) != 2 {
		t.Fatalf("files %+v", live)
	}
	ctx := guard(t)
	for _, id := range []string{b.SessionID, c.SessionID} {
		// As the tools do after each turn.
		if _, err := f.hist.Touch(ctx, id, session.Turn{Backend: "api"}, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.hist.Delete(ctx, b.SessionID); err != nil {
		t.Fatal(err)
	}
	if n := f.b.res.sweep(ctx, f.b.alive, time.Now(), nil); n != 1 {
		t.Errorf("the sweep deleted %d, want 1", n)
	}
	if got := f.fake.Files(); len(got) != 1 || got[0].DisplayName != "c.pdf" {
		t.Errorf("after the sweep: %+v", got)
	}
	f.b.Close()
	if got := f.fake.Files(); len(got) != 0 {
		t.Errorf("after Close: %+v", got)
	}
	if d := f.fake.Deleted(); len(d) != 2 || !slices.Contains(d, live[0].Name) || !slices.Contains(d, live[1].Name) {
		t.Errorf("deleted %q, want %q and %q", d, live[0].Name, live[1].Name)
	}
}

// TestMediaAllUploaded: with no inline allowance, even a small image goes
// through the Files API.
func TestMediaAllUploaded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{MaxInlineBytes: -1})
	png := mediaFile(t, t.TempDir(), "a.png", "image/png", []byte("\x89PNG\r\n\x1a\nsmall"))
	f.mustRun(backend.Turn{Prompt: "look", Media: []backend.Media{png}})
	if r := f.streams()[0]; len(r.Media) != 1 || r.Media[0].FileURI == "" {
		t.Errorf("media %+v", r.Media)
	}
}

// TestMediaInlineBudgetCountsHistory: the inline limit is the request's,
// so the media a conversation already holds inline leave less room: an
// image that went inline on the first turn pushes one of the same size
// on the next turn to the Files API.
func TestMediaInlineBudgetCountsHistory(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{MaxInlineBytes: 200 << 10})
	dir := t.TempDir()
	one := mediaFile(t, dir, "one.png", "image/png", append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{1}, 60<<10)...))
	two := mediaFile(t, dir, "two.png", "image/png", append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{2}, 60<<10)...))
	a := f.mustRun(backend.Turn{Prompt: "first", Media: []backend.Media{one}})
	f.mustRun(backend.Turn{Prompt: "second", Session: a.SessionID, Media: []backend.Media{two}})
	r := f.streams()[1]
	if len(r.Media) != 2 || r.Media[0].FileURI != "" || r.Media[0].SHA256 != one.SHA256 || r.Media[1].FileURI == "" || f.uploads() != 1 {
		t.Errorf("media %+v, %d uploads: want the first inline, the second uploaded", r.Media, f.uploads())
	}
	if len(r.Body) > 200<<10 {
		t.Errorf("the request is %d bytes, over the inline limit", len(r.Body))
	}
}

package filectx

import (
	"context"
	"strings"
	"testing"
)

// Minimal heads of real files of each kind: the magic numbers and what
// follows them in a file written by the usual tools.
var mediaHeads = map[string]string{
	"image/png":       "\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR",
	"image/jpeg":      "\xff\xd8\xff\xe0\x00\x10JFIF\x00",
	"image/webp":      "RIFF\x24\x00\x00\x00WEBPVP8 ",
	"image/heic":      "\x00\x00\x00\x18ftypheic\x00\x00\x00\x00mif1heic",
	"image/heif":      "\x00\x00\x00\x18ftypmif1\x00\x00\x00\x00mif1heic",
	"application/pdf": "%PDF-1.7\n%\xe2\xe3\xcf\xd3\n",
	"audio/wav":       "RIFF\x24\x08\x00\x00WAVEfmt \x10\x00\x00\x00",
	"audio/mp3":       "ID3\x04\x00\x00\x00\x00\x00\x00",
	"audio/aac":       "\xff\xf1\x50\x80\x02\x1f\xfc",
	"audio/ogg":       "OggS\x00\x02\x00\x00\x00\x00",
	"audio/flac":      "fLaC\x00\x00\x00\x22",
	"audio/aiff":      "FORM\x00\x00\x00\x00AIFFCOMM",
	"video/mp4":       "\x00\x00\x00\x20ftypisom\x00\x00\x02\x00isomiso2avc1mp41",
	"video/mov":       "\x00\x00\x00\x14ftypqt  \x00\x00\x00\x00qt  ",
	"video/webm":      "\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\xf7\x81\x01\x42\x82\x84webm",
	"video/avi":       "RIFF\x00\x00\x00\x00AVI LIST",
	"video/mpeg":      "\x00\x00\x01\xba\x44\x00\x04\x00",
	"video/x-flv":     "FLV\x01\x05\x00\x00\x00\x09",
	"video/wmv":       "\x30\x26\xb2\x75\x8e\x66\xcf\x11\xa6\xd9\x00\xaa",
	"video/3gpp":      "\x00\x00\x00\x14ftyp3gp4\x00\x00\x00\x00",
}

func TestSniffMedia(t *testing.T) {
	t.Parallel()
	for want, head := range mediaHeads {
		if got, ok := SniffMedia([]byte(head)); !ok || got != want {
			t.Errorf("%s: got %q %v", want, got, ok)
		}
	}
	// An MP3 without an ID3 tag: an MPEG-1 Layer III frame header.
	if got, ok := SniffMedia([]byte("\xff\xfb\x90\x64\x00")); !ok || got != "audio/mp3" {
		t.Errorf("bare mp3 frame: %q %v", got, ok)
	}
	for _, c := range []struct{ name, head, looks string }{
		{"gif", "GIF89a\x01\x00\x01\x00\x80\x00\x00", "image/gif"},
		{"zip", "PK\x03\x04\x14\x00\x00\x00", "application/zip"},
		{"gzip", "\x1f\x8b\x08\x00\x00\x00", "application/x-gzip"},
		{"elf", "\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00", "application/octet-stream"},
		{"matroska, not webm", "\x1a\x45\xdf\xa3\x9f\x42\x86\x81\x01\x42\x82\x88matroska", "video/x-matroska"},
		{"m4a", "\x00\x00\x00\x20ftypM4A \x00\x00\x00\x00", "audio/mp4"},
		{"text", "package main\n", "text/plain; charset=utf-8"},
		{"empty", "", "text/plain; charset=utf-8"},
	} {
		if got, ok := SniffMedia([]byte(c.head)); ok || got != c.looks {
			t.Errorf("%s: got %q %v, want %q and not media", c.name, got, ok, c.looks)
		}
	}
	for _, m := range MediaTypes {
		if _, ok := mediaHeads[m]; !ok {
			t.Errorf("MediaTypes has %s, which no test sniffs", m)
		}
	}
}

func TestMediaByContentNotName(t *testing.T) {
	t.Parallel()
	png := mediaHeads["image/png"] + strings.Repeat("\x00", 100)
	pdf := mediaHeads["application/pdf"] + "1 0 obj\n"
	root := tree(t, map[string]string{
		"shot.png":     png,
		"notes.txt":    pdf,           // a PDF with a text name
		"fake.png":     "just text\n", // text with an image name
		"bundle.bin":   "PK\x03\x04\x14\x00\x00\x00\x00\x00",
		"dir/icon.png": png,
		"dir/a.go":     "package a\n",
	})
	opts := Options{Media: true}
	sb, err := NewSandbox(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Gather(context.Background(), root, nil, []string{"shot.png", "notes.txt", "dir"}, nil, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Media) != 2 || res.Media[0].Path != "shot.png" || res.Media[0].MIMEType != "image/png" || string(res.Media[0].Data) != png ||
		res.Media[1].Path != "notes.txt" || res.Media[1].MIMEType != "application/pdf" {
		t.Fatalf("media %+v", res.Media)
	}
	if !strings.Contains(res.Text, "dir/a.go") || strings.Contains(res.Text, "PDF") {
		t.Errorf("text %q", res.Text)
	}
	var icon *Skipped
	for i, s := range res.Skipped {
		if s.Path == "dir/icon.png" {
			icon = &res.Skipped[i]
		}
	}
	if icon == nil || icon.Reason != SkipBinary || !strings.Contains(icon.Detail, "named in files itself") {
		t.Errorf("dir/icon.png: %+v in %+v", icon, res.Skipped)
	}
	sent := map[string]string{}
	for _, s := range res.Sent {
		sent[s.Path] = s.Class
	}
	if sent["shot.png"] != "media" || sent["notes.txt"] != "media" || sent["dir/a.go"] != "source" {
		t.Errorf("sent %v", sent)
	}

	// An unsupported binary named is refused, naming what it looks like
	// and what is sent; nothing is read.
	_, err = sb.ScanEntries(context.Background(), []string{"shot.png", "bundle.bin"}, opts)
	if fe := asError(t, err, CategoryValidation); fe.Entry != "bundle.bin" || !strings.Contains(fe.Message, "application/zip") ||
		!strings.Contains(fe.Message, "PDF") {
		t.Errorf("zip: %v", fe)
	}

	// Already sent, unchanged: skipped as a duplicate.
	seen := Seen{}
	res.Record(seen)
	again, err := Gather(context.Background(), root, nil, []string{"shot.png"}, seen, opts)
	if err != nil || len(again.Media) != 0 || len(again.Skipped) != 1 || again.Skipped[0].Reason != SkipDuplicate {
		t.Errorf("again: %v %+v", err, again)
	}

	// Over --max-media-bytes together: refused before anything is read.
	_, err = sb.ScanEntries(context.Background(), []string{"shot.png", "notes.txt"}, Options{Media: true, MaxMediaBytes: int64(len(png))})
	if fe := asError(t, err, CategoryValidation); !strings.Contains(fe.Message, "--max-media-bytes") {
		t.Errorf("over the media limit: %v", fe)
	}

	// Without Media (the CLI backends), a named media file is refused,
	// saying which backend sends it; one in a directory is skipped as
	// binary, and a named binary of another kind too, as before.
	_, err = Gather(context.Background(), root, nil, []string{"notes.txt"}, nil, Options{})
	if fe := asError(t, err, CategoryValidation); fe.Entry != "notes.txt" || !strings.Contains(fe.Message, "application/pdf") ||
		!strings.Contains(fe.Message, "--backend api") {
		t.Errorf("without media: %v", fe)
	}
	res, err = Gather(context.Background(), root, nil, []string{"dir", "bundle.bin"}, nil, Options{})
	if err != nil || len(res.Media) != 0 || res.SkippedBy[SkipBinary] != 2 {
		t.Errorf("without media, a directory and a zip: %v %+v", err, res)
	}
}

package imagesave

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
)

var png = append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 64)...)

// answers is a Confirm that gives its answers in order and records the
// questions; one more question than answers fails the test.
type answers struct {
	t    *testing.T
	yes  []bool
	asks []string
}

func (a *answers) confirm(_ context.Context, q string) (bool, error) {
	a.asks = append(a.asks, q)
	if len(a.asks) > len(a.yes) {
		a.t.Fatalf("unexpected question %d: %s", len(a.asks), q)
	}
	return a.yes[len(a.asks)-1], nil
}

func root(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// entries lists dir's names, to see that nothing else was left there.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func category(t *testing.T, err error) filectx.Category {
	t.Helper()
	var fe *filectx.Error
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a *filectx.Error", err, err)
	}
	if fe.Field != Field {
		t.Errorf("field %q, want %q", fe.Field, Field)
	}
	return fe.Category
}

func TestSaveInsideRoot(t *testing.T) {
	r := root(t)
	if err := os.Mkdir(filepath.Join(r, "img"), 0o755); err != nil {
		t.Fatal(err)
	}
	a := &answers{t: t, yes: []bool{true}}
	s, err := Save(context.Background(), Request{Root: r, Path: "img/cat", MIMEType: "image/png", Data: png}, a.confirm)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(r, "img", "cat.png")
	if s.Path != want || s.Rel != "img/cat.png" || s.Bytes != len(png) || s.Replaced {
		t.Errorf("saved %+v, want %s", s, want)
	}
	got, err := os.ReadFile(want)
	if err != nil || !bytes.Equal(got, png) {
		t.Fatalf("file holds %d bytes (%v), want the image", len(got), err)
	}
	if st, _ := os.Stat(want); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
	if len(a.asks) != 1 || !strings.Contains(a.asks[0], "img/cat.png") || !strings.Contains(a.asks[0], "image/png") {
		t.Errorf("questions %q", a.asks)
	}
	if names := entries(t, filepath.Join(r, "img")); len(names) != 1 {
		t.Errorf("img holds %v, want only cat.png", names)
	}
}

func TestSaveRefusesBeforeAsking(t *testing.T) {
	r := root(t)
	outside := root(t)
	if err := os.Symlink(outside, filepath.Join(r, "out")); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(r, ".state")
	if err := os.Mkdir(state, 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path, mime string
		data             []byte
		want             filectx.Category
		says             string
	}{
		{"dotdot", "../x.png", "image/png", png, filectx.CategorySecurity, "outside the project root"},
		{"absolute elsewhere", filepath.Join(outside, "x.png"), "image/png", png, filectx.CategorySecurity, "outside the project root"},
		{"symlinked directory", "out/x.png", "image/png", png, filectx.CategorySecurity, "symbolic link"},
		{"state directory", ".state/x.png", "image/png", png, filectx.CategorySecurity, "state directory"},
		{"wrong extension", "x.jpg", "image/png", png, filectx.CategoryValidation, "name it with .png"},
		{"unknown type", "x.svg", "image/svg+xml", png, filectx.CategoryValidation, "cannot be saved"},
		{"empty", "x.png", "image/png", nil, filectx.CategoryValidation, "empty"},
		{"too large", "x.png", "image/png", make([]byte, MaxBytes+1), filectx.CategoryValidation, "over the"},
		{"no name", "", "image/png", png, filectx.CategoryValidation, "names no file"},
		{"directory", "sub/", "image/png", png, filectx.CategoryValidation, "names no file"},
		{"missing directory", "nope/x.png", "image/png", png, filectx.CategoryValidation, "does not exist"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := &answers{t: t} // any question fails the test
			_, err := Save(context.Background(), Request{Root: r, Forbidden: []string{state}, Path: c.path, MIMEType: c.mime, Data: c.data}, a.confirm)
			if err == nil {
				t.Fatal("saved")
			}
			if got := category(t, err); got != c.want || !strings.Contains(err.Error(), c.says) {
				t.Errorf("error %s %q, want %s saying %q", got, err, c.want, c.says)
			}
		})
	}
	for _, d := range []string{outside, state} {
		if names := entries(t, d); len(names) != 0 {
			t.Errorf("%s holds %v", d, names)
		}
	}
	if names := entries(t, r); len(names) != 2 {
		t.Errorf("root holds %v, want only out and .state", names)
	}
}

func TestSaveRefusedConfirmationWritesNothing(t *testing.T) {
	r := root(t)
	a := &answers{t: t, yes: []bool{false}}
	_, err := Save(context.Background(), Request{Root: r, Path: "x.png", MIMEType: "image/png", Data: png}, a.confirm)
	if !errors.Is(err, ErrDeclined) || !strings.Contains(err.Error(), "said no") {
		t.Fatalf("error %v, want a no", err)
	}
	if names := entries(t, r); len(names) != 0 {
		t.Errorf("root holds %v", names)
	}
	// A client that cannot be asked: nothing written either.
	if _, err := Save(context.Background(), Request{Root: r, Path: "x.png", MIMEType: "image/png", Data: png}, nil); !errors.Is(err, ErrDeclined) {
		t.Fatalf("error %v without a confirm, want ErrDeclined", err)
	}
	failing := func(context.Context, string) (bool, error) { return false, errors.New("elicitation unsupported") }
	if _, err := Save(context.Background(), Request{Root: r, Path: "x.png", MIMEType: "image/png", Data: png}, failing); !errors.Is(err, ErrDeclined) ||
		!strings.Contains(err.Error(), "elicitation unsupported") {
		t.Fatalf("error %v when asking failed", err)
	}
	if names := entries(t, r); len(names) != 0 {
		t.Errorf("root holds %v", names)
	}
}

func TestSaveExistingFileNeedsSecondYes(t *testing.T) {
	r := root(t)
	old := filepath.Join(r, "x.jpeg")
	if err := os.WriteFile(old, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := &answers{t: t, yes: []bool{true, false}}
	_, err := Save(context.Background(), Request{Root: r, Path: "x.jpeg", MIMEType: "image/jpeg", Data: png}, a.confirm)
	if !errors.Is(err, ErrDeclined) {
		t.Fatalf("error %v, want a no", err)
	}
	if len(a.asks) != 2 || !strings.Contains(a.asks[1], "already exists") {
		t.Errorf("questions %q", a.asks)
	}
	if got, _ := os.ReadFile(old); string(got) != "old" {
		t.Errorf("the old file holds %q", got)
	}
	if names := entries(t, r); len(names) != 1 {
		t.Errorf("root holds %v", names)
	}

	a = &answers{t: t, yes: []bool{true, true}}
	s, err := Save(context.Background(), Request{Root: r, Path: old, MIMEType: "image/jpeg", Data: png}, a.confirm)
	if err != nil || !s.Replaced {
		t.Fatalf("saved %+v, %v", s, err)
	}
	if got, _ := os.ReadFile(old); !bytes.Equal(got, png) {
		t.Errorf("the file holds %q", got)
	}
	if st, _ := os.Stat(old); st.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", st.Mode().Perm())
	}
}

func TestSaveNeverWritesThroughSymlink(t *testing.T) {
	r := root(t)
	outside := root(t)
	victim := filepath.Join(outside, "victim.png")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, filepath.Join(r, "link.png")); err != nil {
		t.Fatal(err)
	}
	a := &answers{t: t}
	_, err := Save(context.Background(), Request{Root: r, Path: "link.png", MIMEType: "image/png", Data: png}, a.confirm)
	if err == nil || category(t, err) != filectx.CategorySecurity {
		t.Fatalf("error %v, want a refusal", err)
	}
	if got, _ := os.ReadFile(victim); string(got) != "keep" {
		t.Errorf("the file outside holds %q", got)
	}
}

// A file that appears at the path while the user is asked is not
// overwritten, and the temporary file is removed.
func TestSaveFailedWriteLeavesNoTempFile(t *testing.T) {
	r := root(t)
	target := filepath.Join(r, "x.png")
	confirm := func(context.Context, string) (bool, error) {
		return true, os.WriteFile(target, []byte("theirs"), 0o644)
	}
	_, err := Save(context.Background(), Request{Root: r, Path: "x.png", MIMEType: "image/png", Data: png}, confirm)
	if err == nil || !strings.Contains(err.Error(), "appeared") {
		t.Fatalf("error %v, want the file that appeared", err)
	}
	if got, _ := os.ReadFile(target); string(got) != "theirs" {
		t.Errorf("the file holds %q", got)
	}
	if names := entries(t, r); len(names) != 1 {
		t.Errorf("root holds %v, want only x.png", names)
	}

	// A directory put in the image's place while asked, with a yes to
	// replacing: the rename fails, and no temporary file stays.
	other := filepath.Join(r, "y.png")
	if err := os.WriteFile(other, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := 0
	confirm = func(context.Context, string) (bool, error) {
		if n++; n == 2 {
			if err := os.Remove(other); err != nil {
				return false, err
			}
			return true, os.MkdirAll(filepath.Join(other, "full"), 0o755)
		}
		return true, nil
	}
	if _, err := Save(context.Background(), Request{Root: r, Path: "y.png", MIMEType: "image/png", Data: png}, confirm); err == nil {
		t.Fatal("saved over a directory")
	}
	if names := entries(t, r); len(names) != 2 {
		t.Errorf("root holds %v, want only x.png and y.png", names)
	}
}

func TestSaveCancelledWritesNothing(t *testing.T) {
	r := root(t)
	ctx, cancel := context.WithCancel(context.Background())
	confirm := func(context.Context, string) (bool, error) { cancel(); return true, nil }
	if _, err := Save(ctx, Request{Root: r, Path: "x.png", MIMEType: "image/png", Data: png}, confirm); err == nil {
		t.Fatal("saved after the call ended")
	}
	if names := entries(t, r); len(names) != 0 {
		t.Errorf("root holds %v", names)
	}
}

// TestCheckAndTypeOf: Check refuses what Save would before asking
// anything, and TypeOf names the type a path's extension calls for.
func TestCheckAndTypeOf(t *testing.T) {
	root := t.TempDir()
	for p, want := range map[string]string{"a.png": "image/png", "b.JPG": "image/jpeg", "c.jpeg": "image/jpeg", "d.webp": "image/webp", "e": "image/png", "f.txt": "image/png"} {
		if got := TypeOf(p); got != want {
			t.Errorf("TypeOf(%q) = %s, want %s", p, got, want)
		}
	}
	if err := Check(Request{Root: root, Path: "out.jpg", MIMEType: TypeOf("out.jpg"), Data: []byte{0}}); err != nil {
		t.Errorf("Check of a good path: %v", err)
	}
	for _, p := range []string{"../out.png", "out.txt", "missing/out.png", ""} {
		if err := Check(Request{Root: root, Path: p, MIMEType: TypeOf(p), Data: []byte{0}}); err == nil {
			t.Errorf("Check(%q) took it", p)
		}
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("Check wrote %d entries", len(entries))
	}
}

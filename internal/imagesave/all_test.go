package imagesave

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSaveAllTwoQuestions: twelve images, two of whose paths hold files
// and one of which is a bad path, are asked about in one question naming
// ten paths and counting the rest, and one about the two to replace; a no
// to that saves the others and leaves the two files, and a file that
// appears at a path after the questions is left as it is.
func TestSaveAllTwoQuestions(t *testing.T) {
	r := root(t)
	var rs []Request
	for i := 1; i <= 12; i++ {
		rs = append(rs, Request{Root: r, Path: fmt.Sprintf("p-%d.png", i), MIMEType: "image/png", Data: png})
	}
	rs[11].Path = "../out.png"
	for _, name := range []string{"p-2.png", "p-5.png"} {
		if err := os.WriteFile(filepath.Join(r, name), []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a := &answers{t: t, yes: []bool{true, false}}
	confirm := func(ctx context.Context, q string) (bool, error) {
		if len(a.asks) == 1 {
			// Between the questions and the writes, p-7.png appears.
			if err := os.WriteFile(filepath.Join(r, "p-7.png"), []byte("new"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return a.confirm(ctx, q)
	}
	saved, errs := SaveAll(context.Background(), rs, confirm)
	if len(a.asks) != 2 || !strings.Contains(a.asks[0], "Save the 11 images Gemini made (image/png, 792 bytes in all) as p-1.png, p-2.png") ||
		!strings.Contains(a.asks[0], "p-10.png and 1 more in the project root") ||
		!strings.Contains(a.asks[1], "p-2.png, p-5.png already exist") {
		t.Fatalf("asked %q", a.asks)
	}
	for i, err := range errs {
		name := rs[i].Path
		switch name {
		case "p-2.png", "p-5.png":
			if !errors.Is(err, ErrDeclined) {
				t.Errorf("%s: %v, want declined", name, err)
			}
		case "p-7.png":
			if !errors.Is(err, os.ErrExist) {
				t.Errorf("%s: %v, want it left as it appeared", name, err)
			}
		case "../out.png":
			if err == nil || category(t, err) != "security" {
				t.Errorf("%s: %v", name, err)
			}
		default:
			if err != nil || saved[i] == nil || saved[i].Rel != name {
				t.Errorf("%s: %v %+v", name, err, saved[i])
			}
		}
	}
	for name, want := range map[string]string{"p-2.png": "old", "p-5.png": "old", "p-7.png": "new", "p-1.png": string(png)} {
		if got, err := os.ReadFile(filepath.Join(r, name)); err != nil || !bytes.Equal(got, []byte(want)) {
			t.Errorf("%s: %q %v", name, got, err)
		}
	}
}

// TestCheckLongPath: a path or file name longer than a file system takes
// is refused before anything is asked, quoted clipped; one at the limit
// is not.
func TestCheckLongPath(t *testing.T) {
	r := root(t)
	for _, c := range []struct {
		path string
		ok   bool
	}{
		{strings.Repeat("a", 251) + ".png", true},
		{strings.Repeat("a", 251), true},
		{strings.Repeat("a", 252), false},
		{strings.Repeat("a", 252) + ".png", false},
		{strings.Repeat("d/", 2100) + "x.png", false},
		{strings.Repeat("x", 200000), false},
	} {
		err := Check(Request{Root: r, Path: c.path, MIMEType: "image/png", Data: png})
		if c.ok != (err == nil) || err != nil && (category(t, err) != "validation" || len(err.Error()) > 1000) {
			t.Errorf("a path of %d bytes: %.300v", len(c.path), err)
		}
	}
}

package imagesave

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// The directory of the path is swapped for a symbolic link to a directory
// outside the root between the question and the yes: nothing is written
// outside, and no temporary file is left in either place.
func TestSaveDirectorySwappedForLinkWhileAsked(t *testing.T) {
	r := root(t)
	outside := root(t)
	dir := filepath.Join(r, "images")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	confirm := func(context.Context, string) (bool, error) {
		if err := os.Remove(dir); err != nil {
			return false, err
		}
		return true, os.Symlink(outside, dir)
	}
	_, err := Save(context.Background(), Request{Root: r, Path: "images/out.png", MIMEType: "image/png", Data: png}, confirm)
	if err == nil {
		t.Fatal("saved through a link swapped in while the user was asked")
	}
	if names := entries(t, outside); len(names) != 0 {
		t.Errorf("the directory outside the root holds %v", names)
	}
	if names := entries(t, r); len(names) != 1 {
		t.Errorf("the root holds %v, want only the link", names)
	}
}

// The file to replace is swapped for a link to a file outside the root
// between the first yes and the second: that file is left as it was.
func TestSaveReplacedFileSwappedForLinkWhileAsked(t *testing.T) {
	r := root(t)
	outside := root(t)
	victim := filepath.Join(outside, "victim.png")
	if err := os.WriteFile(victim, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(r, "x.png")
	if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	n := 0
	confirm := func(context.Context, string) (bool, error) {
		if n++; n == 2 {
			if err := os.Remove(target); err != nil {
				return false, err
			}
			return true, os.Symlink(victim, target)
		}
		return true, nil
	}
	if _, err := Save(context.Background(), Request{Root: r, Path: "x.png", MIMEType: "image/png", Data: png}, confirm); err == nil {
		t.Fatal("replaced a link swapped in while the user was asked")
	}
	if got, _ := os.ReadFile(victim); string(got) != "keep" {
		t.Errorf("the file outside holds %q", got)
	}
	if l, err := os.Readlink(target); err != nil || l != victim {
		t.Errorf("the link was replaced: %q %v", l, err)
	}
	if names := entries(t, r); len(names) != 1 {
		t.Errorf("the root holds %v, want only x.png", names)
	}
}

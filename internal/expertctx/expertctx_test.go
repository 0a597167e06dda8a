package expertctx

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/expert"
)

func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func category(t *testing.T, err error) (expert.Category, string) {
	t.Helper()
	var e *expert.Error
	if !errors.As(err, &e) {
		t.Fatalf("want an *expert.Error, got %T %v", err, err)
	}
	return e.Category, e.Field
}

func TestFilesErrorCategories(t *testing.T) {
	r := root(t)
	state := filepath.Join(r, "state")
	if err := os.MkdirAll(state, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(state, "sessions.db"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &Context{Root: r, Forbidden: []string{state}}
	for _, tc := range []struct {
		entry string
		cat   expert.Category
	}{
		{"../x", expert.Security},
		{"/etc/passwd", expert.Security},
		{"state/sessions.db", expert.Security},
		{"missing.go", expert.Validation},
	} {
		_, _, _, err := c.Files(context.Background(), []string{tc.entry}, expert.Seen{})
		if cat, field := category(t, err); cat != tc.cat || field != "files" {
			t.Errorf("%s: %v on %q, want %v", tc.entry, cat, field, tc.cat)
		}
	}
	bad := &Context{Root: filepath.Join(r, "nowhere")}
	_, _, _, err := bad.Files(context.Background(), []string{"a.go"}, expert.Seen{})
	if cat, _ := category(t, err); cat != expert.System {
		t.Errorf("a missing root: %v", cat)
	}
}

func TestFilesSkipsWhatTheThreadWasSent(t *testing.T) {
	r := root(t)
	if err := os.WriteFile(filepath.Join(r, "a.go"), []byte("package a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &Context{Root: r}
	_, sent, _, err := c.Files(context.Background(), []string{"a.go"}, expert.Seen{})
	if err != nil || len(sent) != 1 || sent[0].Hash == "" {
		t.Fatalf("%v %v", sent, err)
	}
	text, again, skipped, err := c.Files(context.Background(), []string{"a.go"}, expert.Seen{"a.go": sent[0].Hash})
	if err != nil || text != "" || len(again) != 0 || len(skipped) != 1 || !strings.HasPrefix(skipped[0].Reason, "duplicate") {
		t.Fatalf("second time: %q %v %v %v", text, again, skipped, err)
	}
	// Changed since: sent again.
	if err := os.WriteFile(filepath.Join(r, "a.go"), []byte("package a // changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, again, _, _ = c.Files(context.Background(), []string{"a.go"}, expert.Seen{"a.go": sent[0].Hash}); len(again) != 1 {
		t.Fatalf("a changed file was not sent again: %v", again)
	}
}

func TestChangesErrorCategories(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	r := root(t)
	if err := os.MkdirAll(filepath.Join(r, "plain"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := &Context{Root: r}
	_, err := c.Changes(context.Background(), "plain", true, true, nil)
	if cat, field := category(t, err); cat != expert.Validation || field != "path" {
		t.Errorf("not a repository: %v on %q", cat, field)
	}
	_, err = c.Changes(context.Background(), "../", true, true, nil)
	if cat, field := category(t, err); cat != expert.Security || field != "path" {
		t.Errorf("outside: %v on %q", cat, field)
	}
	noGit := &Context{Root: r, Git: filepath.Join(r, "no-such-git")}
	_, err = noGit.Changes(context.Background(), "plain", true, true, nil)
	if cat, _ := category(t, err); cat != expert.System {
		t.Errorf("git missing: %v", cat)
	}
}

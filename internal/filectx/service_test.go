package filectx_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx/gitchanges"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
)

func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// category is err's category and field as the tools report them.
func category(t *testing.T, err error) (toolerr.Category, string) {
	t.Helper()
	var e *filectx.Error
	if !errors.As(err, &e) {
		t.Fatalf("want a *filectx.Error, got %T %v", err, err)
	}
	return toolerr.Classify(err)
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
	c := &filectx.Service{Root: r, Forbidden: []string{state}}
	for _, tc := range []struct {
		entry string
		cat   toolerr.Category
	}{
		{"../x", toolerr.Security},
		{"/etc/passwd", toolerr.Security},
		{"state/sessions.db", toolerr.Security},
		{"missing.go", toolerr.Validation},
	} {
		_, err := c.Gather(context.Background(), "", []string{tc.entry})
		if cat, field := category(t, err); cat != tc.cat || field != "files" {
			t.Errorf("%s: %v on %q, want %v", tc.entry, cat, field, tc.cat)
		}
	}
	bad := &filectx.Service{Root: filepath.Join(r, "nowhere")}
	_, err := bad.Gather(context.Background(), "", []string{"a.go"})
	if cat, _ := category(t, err); cat != toolerr.System {
		t.Errorf("a missing root: %v", cat)
	}
}

func TestFilesSkipsWhatTheThreadWasSent(t *testing.T) {
	r := root(t)
	if err := os.WriteFile(filepath.Join(r, "a.go"), []byte("package a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &filectx.Service{Root: r, Sent: &filectx.MemorySent{}}
	ctx := context.Background()
	first, err := c.Gather(ctx, "", []string{"a.go"})
	if err != nil || len(first.Processed) != 1 || first.Processed[0].Hash == "" {
		t.Fatalf("%v %v", first, err)
	}
	if err := c.Record(ctx, "thread", first); err != nil {
		t.Fatal(err)
	}
	again, err := c.Gather(ctx, "thread", []string{"a.go"})
	if err != nil || again.Text != "" || len(again.Processed) != 0 || len(again.Skipped) != 1 || !strings.HasPrefix(again.Skipped[0].Reason, "duplicate") {
		t.Fatalf("second time: %+v %v", again, err)
	}
	// Another thread was sent nothing.
	if other, err := c.Gather(ctx, "other", []string{"a.go"}); err != nil || len(other.Processed) != 1 {
		t.Fatalf("another thread: %+v %v", other, err)
	}
	// Changed since: sent again.
	if err := os.WriteFile(filepath.Join(r, "a.go"), []byte("package a // changed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if changed, _ := c.Gather(ctx, "thread", []string{"a.go"}); len(changed.Processed) != 1 {
		t.Fatalf("a changed file was not sent again: %+v", changed)
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
	c := &filectx.Service{Root: r}
	_, err := c.Changes(context.Background(), "plain", true, true, nil)
	if cat, field := category(t, err); cat != toolerr.Validation || field != "path" {
		t.Errorf("not a repository: %v on %q", cat, field)
	}
	_, err = c.Changes(context.Background(), "../", true, true, nil)
	if cat, field := category(t, err); cat != toolerr.Security || field != "path" {
		t.Errorf("outside: %v on %q", cat, field)
	}
	noGit := &filectx.Service{Root: r, Git: filepath.Join(r, "no-such-git")}
	_, err = noGit.Changes(context.Background(), "plain", true, true, nil)
	if cat, _ := category(t, err); cat != toolerr.System {
		t.Errorf("git missing: %v", cat)
	}
}

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=Test", "-c", "user.email=test@example.com", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// TestChangesRefusesGitDataOutsideTheRoot puts in the root a work tree
// whose .git file names a repository outside: precommit refuses it as a
// security error and sends nothing of the outside repository.
func TestChangesRefusesGitDataOutsideTheRoot(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	outside := root(t)
	gitIn(t, outside, "init", "-q")
	if err := os.WriteFile(filepath.Join(outside, "victim.txt"), []byte("OUTSIDE-STAGED\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, outside, "add", "victim.txt")
	r := root(t)
	if err := os.MkdirAll(filepath.Join(r, "proj"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r, "proj", ".git"), []byte("gitdir: "+filepath.Join(outside, ".git")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &filectx.Service{Root: r}
	cs, err := c.Changes(context.Background(), "proj", true, true, nil)
	if err == nil {
		t.Fatalf("not refused:\n%s", cs.Text)
	}
	if cat, field := category(t, err); cat != toolerr.Security || field != "path" || !strings.Contains(err.Error(), "outside the project root") {
		t.Errorf("%v on %q: %v", cat, field, err)
	}
}

// TestChangesListsAtMostMaxFiles: thousands of new files give a bounded
// list and one line counting the rest.
func TestChangesListsAtMostMaxFiles(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	r := root(t)
	gitIn(t, r, "init", "-q")
	if err := os.MkdirAll(filepath.Join(r, "new"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		if err := os.WriteFile(filepath.Join(r, "new", fmt.Sprintf("f%04d.txt", i)), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := &filectx.Service{Root: r}
	cs, err := c.Changes(context.Background(), ".", true, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Processed) != gitchanges.DefaultMaxFiles || len(cs.Skipped) != 1 || cs.Skipped[0].Path != "(1500 more)" {
		t.Fatalf("%d processed, skipped %+v", len(cs.Processed), cs.Skipped)
	}
}

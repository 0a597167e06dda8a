package filesearch

import (
	"context"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/api"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// A root indexed through the API backend's own client, then a turn that
// retrieves from its store, cited by path and lines.
func TestIndexQueryAndCite(t *testing.T) {
	f := newFixture(t)
	hist := memstore.New(session.Options{})
	t.Cleanup(func() { hist.Close() })
	b, err := api.New(api.Options{Getenv: func(k string) string {
		return map[string]string{"GEMINI_API_KEY": "test-key", "GOOGLE_GEMINI_BASE_URL": f.fake.URL()}[k]
	}}, hist, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	remote := NewAPI(b.GenAI())
	remote.Poll = f.api.Poll
	root := t.TempDir()
	tree(t, root, 6)
	write(t, root, "auth/login.go", "package auth\n\n// Login checks a password.\nfunc Login(user, pass string) bool {\n\treturn check(user, pass)\n}\n")
	write(t, root, "auth/keys.go", "package auth\n\nvar password = \"hunter2hunter2\"\n\n// Login is not here.\n")
	ix := f.indexer(remote, Options{})
	rep := f.index(ix, root, "alice")

	store, err := ix.Store(context.Background(), root, "alice")
	if err != nil || store != rep.Store {
		t.Fatalf("Store: %q, %v; want %s", store, err, rep.Store)
	}
	a, err := b.Run(context.Background(), backend.Turn{Prompt: "where is Login? [[cite:// Login]]",
		Builtins: backend.Builtins{FileSearchStores: []string{store}}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Grounding == nil || len(a.Grounding.Files) != 2 {
		t.Fatalf("grounding %+v, want the two files that mention Login", a.Grounding)
	}
	held, err := ix.Held(context.Background(), root, "alice")
	if err != nil || !held["auth/login.go"] || !held["auth/keys.go"] {
		t.Fatalf("Held: %v, %v; want the files indexed", held, err)
	}
	cs := Cite(root, nil, held, a.Grounding.Files, 0)
	text, links := Render(cs)
	want := "Files:\n[1] auth/keys.go:5\n[2] auth/login.go:3-5"
	if text != want {
		t.Fatalf("citations:\n%s\nwant:\n%s", text, want)
	}
	if len(links) != 2 || links[1].URI != (&url.URL{Scheme: "file", Path: filepath.Join(root, "auth", "login.go")}).String() {
		t.Fatalf("resource links %+v", links)
	}
}

func TestCiteKeepsToTheRoot(t *testing.T) {
	root := t.TempDir()
	write(t, root, "a.go", "package a\n\nfunc A() {}\n")
	cs := Cite(root, nil, map[string]bool{"a.go": true}, []backend.FileSource{
		{Path: "../../etc/passwd", Text: "root:x:0:0"},
		{Path: "a.go", Text: "changed since the index"},
		{Path: "a.go", Text: "func A() {}\n"},
	}, 0)
	text, links := Render(cs)
	if text != "Files:\n[1] ../../etc/passwd\n[2] a.go\n[3] a.go:3" || len(links) != 2 {
		t.Fatalf("citations %q, %d links; want the path outside the root named without a link or lines", text, len(links))
	}
	for _, l := range links {
		if !strings.HasSuffix(l.URI, "/a.go") {
			t.Fatalf("link %s", l.URI)
		}
	}
}

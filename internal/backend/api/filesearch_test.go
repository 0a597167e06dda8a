package api

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

func TestFileSearchGrounding(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	ctx := context.Background()
	c := f.b.GenAI()
	st, err := c.FileSearchStores.Create(ctx, &genai.CreateFileSearchStoreConfig{DisplayName: "project"})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct{ path, text string }{
		{"a/one.go", "package a\n\nfunc One() {}\n"},
		{"b/two.go", "package b\n\n// Two says hello.\nfunc Two() string { return \"hello\" }\n"},
	} {
		op, err := c.FileSearchStores.UploadToFileSearchStore(ctx, strings.NewReader(d.text), st.Name, &genai.UploadToFileSearchStoreConfig{
			MIMEType: "text/plain", DisplayName: "doc " + d.path,
			CustomMetadata: []*genai.CustomMetadata{{Key: "path", StringValue: d.path}},
		})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Operations.GetUploadToFileSearchStoreOperation(ctx, op, nil); err != nil {
			t.Fatal(err)
		}
	}
	a := f.mustRun(backend.Turn{Prompt: "who says hello? [[cite:// Two]]", Builtins: backend.Builtins{FileSearchStores: []string{st.Name}}})
	reqs := f.streams()
	if len(reqs) != 1 || !slices.Equal(reqs[0].FileSearchStores(), []string{st.Name}) {
		t.Fatalf("the request offered fileSearch over %v, want [%s]", reqs[len(reqs)-1].FileSearchStores(), st.Name)
	}
	g := a.Grounding
	if g == nil || len(g.Files) != 1 || len(g.Sources) != 0 {
		t.Fatalf("grounding %+v, want one file cited", g)
	}
	want := backend.FileSource{Store: st.Name, Path: "b/two.go", Text: "// Two says hello.\nfunc Two() string { return \"hello\" }\n"}
	if g.Files[0] != want {
		t.Fatalf("file source %+v, want %+v (the path from its custom metadata, not its title)", g.Files[0], want)
	}
}

func TestFileSearchRefusedByTheCLIBackends(t *testing.T) {
	err := backend.Builtins{FileSearchStores: []string{"fileSearchStores/x"}}.Refuse("cli")
	if !errors.Is(err, backend.ErrNoBuiltins) || !strings.Contains(err.Error(), "file_search: the cli backend cannot do this") {
		t.Fatalf("Refuse: %v", err)
	}
}

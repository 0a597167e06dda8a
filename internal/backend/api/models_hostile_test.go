package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// A model list far longer than any the API serves is read up to
// maxListedModels, in as many pages as that takes, not to its end; the
// names no turn could ask for (not a model name by validate.Model) are
// left out of it, so that they reach neither a default, an error message
// nor a metric label.
func TestHostileModelListBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	hostile := []string{"gemini-9.9-flash\nlevel=ERROR msg=forged", "gemini-9.9-flash/../../x", "gemini-9.9-flash " + strings.Repeat("x", 100),
		"gemini-9.9-flash-" + strings.Repeat("x", 200), "-gemini-9.9-flash"}
	var list []fakeapi.Model
	for _, n := range hostile {
		list = append(list, fakeapi.Model{Name: "models/" + n, Methods: []string{"generateContent"}})
	}
	list = append(list, fakeapi.Model{Name: "models/gemini-hostile-display", DisplayName: "\x1b[2J" + strings.Repeat("d", 1<<20),
		Methods: []string{"generateContent"}})
	list = append(list, fakeapi.DefaultModels()...)
	for i := range 20000 {
		list = append(list, fakeapi.Model{Name: fmt.Sprintf("models/gemini-x-%05d", i), Methods: []string{"generateContent"}})
	}
	f.fake.SetModels(list)
	ms, err := f.b.Models(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) > maxListedModels {
		t.Fatalf("%d models kept of a list of %d, want at most %d", len(ms), len(list), maxListedModels)
	}
	for _, m := range ms {
		if len(m.DisplayName) > 300 || strings.ContainsRune(m.DisplayName, 0x1b) {
			t.Errorf("model %s keeps a display name of %d bytes: %.40q", m.Name, len(m.DisplayName), m.DisplayName)
		}
		for _, h := range hostile {
			if m.Name == h {
				t.Errorf("the model list kept the name %q", h)
			}
		}
	}
	lists := 0
	for _, r := range f.fake.Requests() {
		if r.Method == fakeapi.MethodListModels {
			lists++
		}
	}
	if lists > maxListedModels/50+1 {
		t.Fatalf("the model list took %d requests, want the pages of %d models at most", lists, maxListedModels)
	}
	// A model of the list within the bound is used as ever.
	f.mustRun(backend.Turn{Prompt: "hi", Model: "gemini-2.5-pro"})
}

// An endpoint that answers every page of the model list with no models
// and another page token is asked at most maxModelPages times.
func TestEndlessModelListBounded(t *testing.T) {
	t.Parallel()
	var pages atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/models") {
			http.NotFound(w, r)
			return
		}
		n := pages.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"nextPageToken":"p%d"}`, n)
	}))
	t.Cleanup(srv.Close)
	f := newFixture(t, Options{Getenv: envAt(srv.URL)})
	done := make(chan error, 1)
	go func() { _, err := f.b.Models(context.Background()); done <- err }()
	if err := <-done; err != nil {
		t.Logf("the endless list: %v", err)
	}
	if n := pages.Load(); n > maxModelPages {
		t.Fatalf("the endless model list was asked %d pages, want at most %d", n, maxModelPages)
	}
}

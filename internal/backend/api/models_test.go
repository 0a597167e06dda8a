package api

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

func TestModelSuggestions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	_, err := f.run(backend.Turn{Prompt: "hi", Model: "gemini-2.5-flsh"})
	wantKind(t, err, backend.KindInput, 0, `"gemini-2.5-flsh" is not in the Gemini API's model list`, "did you mean gemini-2.5-flash")
	_, err = f.run(backend.Turn{Prompt: "hi", Model: "gemini-2.5"})
	wantKind(t, err, backend.KindInput, 0, "gemini-2.5-flash", "gemini-2.5-pro")
	_, err = f.run(backend.Turn{Prompt: "hi", Model: "claude"})
	wantKind(t, err, backend.KindInput, 0, "nor is any like it", DefaultModel)
	_, err = f.run(backend.Turn{Prompt: "hi", Model: "text-embedding-004"})
	wantKind(t, err, backend.KindInput, 0, "does not generate content")
	if n := len(f.streams()); n != 0 {
		t.Fatalf("%d turns were sent to the API with a bad model", n)
	}
	lists := 0
	for _, r := range f.fake.Requests() {
		if r.Method == fakeapi.MethodListModels {
			lists++
		}
	}
	if lists != 1 {
		t.Fatalf("the model list was fetched %d times, want once (cached)", lists)
	}
}

func TestModelListRefreshed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{ModelsTTL: time.Nanosecond})
	_, err := f.run(backend.Turn{Prompt: "hi", Model: "gemini-9-ultra"})
	wantKind(t, err, backend.KindInput, 0, "not in the Gemini API's model list")
	f.fake.SetModels(append(fakeapi.DefaultModels(), fakeapi.Model{Name: "models/gemini-9-ultra"}))
	f.mustRun(backend.Turn{Prompt: "hi", Model: "gemini-9-ultra"})
}

func TestCheck(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	if err := f.b.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.restart(Options{Model: "gemini-1.0-pro"})
	wantKind(t, f.b.Check(context.Background()), backend.KindInput, 0, `the default model "gemini-1.0-pro"`)
	f.restart(Options{FallbackModel: "gemini-2.5-flsh"})
	wantKind(t, f.b.Check(context.Background()), backend.KindInput, 0, `the fallback model "gemini-2.5-flsh"`, "did you mean gemini-2.5-flash")
	f.fake.SetModels([]fakeapi.Model{{Name: "models/gemini-2.5-flash"}})
	f.restart(Options{FallbackModel: "pro"})
	wantKind(t, f.b.Check(context.Background()), backend.KindInput, 0, `--fallback-model: model "pro" is an alias`)
	f.restart(Options{FallbackModel: "flash"})
	if err := f.b.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestNullModelList: an answer the SDK panics on is a list that could not
// be had, not a crash.
func TestNullModelList(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"models":null}`)
	}))
	defer ts.Close()
	f := newFixture(t, Options{})
	f.restart(Options{BaseURL: ts.URL})
	err := f.b.Check(context.Background())
	wantKind(t, err, backend.KindFailed, 0, "the model list could not be read")
	f.b.Close()
}

// TestEmptyModelList: an endpoint that lists no models leaves names
// unchecked rather than refusing them all.
func TestEmptyModelList(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.fake.SetModels(nil)
	f.mustRun(backend.Turn{Prompt: "hi", Model: "any-model"})
	if err := f.b.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestModelAliases: pro, flash and flash-lite stand for the newest stable
// model of their family in the API's list, by version number (3.10 after
// 3.9), never a preview or a variant; the answer says which model it was.
func TestModelAliases(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{Model: "flash"})
	gen := []string{"generateContent"}
	f.fake.SetModels([]fakeapi.Model{
		{Name: "models/gemini-2.5-pro", Methods: gen},
		{Name: "models/gemini-3.9-pro", Methods: gen},
		{Name: "models/gemini-3.10-pro", Methods: gen},
		{Name: "models/gemini-4-pro-preview", Methods: gen},
		{Name: "models/gemini-4-pro-exp-0801", Methods: gen},
		{Name: "models/gemini-2.5-flash", Methods: gen},
		{Name: "models/gemini-3-flash", Methods: gen},
		{Name: "models/gemini-3.5-flash-image", Methods: gen},
		{Name: "models/gemini-3.5-flash-001", Methods: gen},
		{Name: "models/gemini-9-flash", Methods: []string{"embedContent"}},
	})
	for alias, want := range map[string]string{"pro": "gemini-3.10-pro", "flash": "gemini-3-flash", "": "gemini-3-flash"} {
		a := f.mustRun(backend.Turn{Prompt: "hi " + alias, Model: alias})
		if a.Model != want {
			t.Errorf("model %q answered as %q, want %q", alias, a.Model, want)
		}
		if r := f.streams(); r[len(r)-1].Model != want {
			t.Errorf("model %q was sent as %q, want %q", alias, r[len(r)-1].Model, want)
		}
	}
	if err := f.b.Check(context.Background()); err != nil {
		t.Errorf("Check with --model flash: %v", err)
	}
	n := len(f.streams())
	_, err := f.run(backend.Turn{Prompt: "hi", Model: "flash-lite"})
	wantKind(t, err, backend.KindInput, 0, `model "flash-lite" is an alias`, "has none")
	if len(f.streams()) != n {
		t.Error("a turn was sent with an alias that stands for no model")
	}
}

package api

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// imageFixture is a fixture whose fake lists the image models too.
func imageFixture(t *testing.T, opts Options) *fixture {
	f := newFixture(t, opts)
	f.fake.SetModels(append(fakeapi.DefaultModels(), fakeapi.ImageModels()...))
	return f
}

var askImage = backend.Builtins{Image: &backend.ImageRequest{}}

// A turn that asks for images, naming no model, goes to the newest stable
// image model of the list, with the TEXT and IMAGE modalities and the
// image config asked for, and returns the images with the model's text.
func TestImageGenerate(t *testing.T) {
	t.Parallel()
	f := imageFixture(t, Options{})
	a := f.mustRun(backend.Turn{Prompt: "a red fox [[images:2]]",
		Builtins: backend.Builtins{Image: &backend.ImageRequest{AspectRatio: "16:9", Size: "2K"}}})
	if a.Model != "gemini-2.5-flash-image" {
		t.Errorf("model %q, want the stable image model", a.Model)
	}
	if len(a.Images) != 2 || a.Images[0].MIMEType != "image/png" || !bytes.Equal(a.Images[1].Data, fakeapi.GenImage) {
		t.Fatalf("images %+v", a.Images)
	}
	if !strings.Contains(a.Text, "fake-api image: a red fox") || !strings.Contains(a.Text, "[image 2: image/png") || len(a.NotApplied) != 0 {
		t.Errorf("text %q, notes %q", a.Text, a.NotApplied)
	}
	req := f.streams()[0]
	if ar, size := req.ImageConfig(); !req.WantsImages() || ar != "16:9" || size != "2K" {
		t.Errorf("request: images %v, aspect ratio %q, size %q", req.WantsImages(), ar, size)
	}

	// A model named is used when it makes images; the text turn before
	// and after asks for no images.
	a = f.mustRun(backend.Turn{Prompt: "a blue fox", Model: "gemini-3-pro-image-preview", Builtins: askImage})
	if len(a.Images) != 1 || !strings.HasPrefix(a.Model, "gemini-3-pro-image-preview") {
		t.Errorf("model %q, %d images", a.Model, len(a.Images))
	}
	f.mustRun(backend.Turn{Prompt: "words only"})
	if s := f.streams(); s[len(s)-1].WantsImages() {
		t.Error("a text turn asked for images")
	}
}

// An edit sends its input images, and gets them back edited (the fake
// echoes them).
func TestImageEdit(t *testing.T) {
	t.Parallel()
	f := imageFixture(t, Options{})
	in := append([]byte("\xff\xd8\xff"), bytes.Repeat([]byte("j"), 300)...)
	m := mediaFile(t, t.TempDir(), "photo.jpg", "image/jpeg", in)
	a := f.mustRun(backend.Turn{Prompt: "make the sky purple", Media: []backend.Media{m}, Builtins: askImage})
	if len(a.Images) != 1 || a.Images[0].MIMEType != "image/jpeg" || !bytes.Equal(a.Images[0].Data, in) {
		t.Fatalf("images %+v", a.Images)
	}
	want := fakeapi.ImageText("", []fakeapi.InlineImage{{MIMEType: "image/jpeg", Data: in}})
	if !strings.Contains(a.Text, want) {
		t.Errorf("text %q, want %q", a.Text, want)
	}
}

// The images of one answer are capped in count, and in bytes by the
// turn's budget.
func TestImageCaps(t *testing.T) {
	t.Parallel()
	f := imageFixture(t, Options{})
	a := f.mustRun(backend.Turn{Prompt: fmt.Sprintf("many [[images:%d]]", maxImagesPerAnswer+3), Builtins: askImage})
	if len(a.Images) != maxImagesPerAnswer || strings.Count(a.Text, "was left out: over 16 images") != 3 {
		t.Errorf("%d images; text %q", len(a.Images), a.Text)
	}

	// A picture larger than the cap on one event of a text answer comes
	// whole: an image turn's events may be larger.
	big := MaxFrameBytes * 7 / 8
	a = f.mustRun(backend.Turn{Prompt: fmt.Sprintf("large [[image-bytes:%d]]", big), Builtins: askImage})
	if len(a.Images) != 1 || len(a.Images[0].Data) != big {
		t.Errorf("%d images", len(a.Images))
	}

	f = imageFixture(t, Options{MaxOutputBytes: 64 << 10})
	_, err := f.run(backend.Turn{Prompt: "big [[images:2]] [[image-bytes:60000]]", Builtins: askImage})
	wantKind(t, err, backend.KindOutputTooBig, 0)
}

// A refusal for safety, or an answer with no image, is a clear error; a
// blocked prompt too. Nothing is recorded.
func TestImageRefusals(t *testing.T) {
	t.Parallel()
	f := imageFixture(t, Options{})
	for reason, says := range map[string]string{
		"IMAGE_SAFETY":             "for safety",
		"IMAGE_PROHIBITED_CONTENT": "for safety",
		"SAFETY":                   "for safety",
		"PROHIBITED_CONTENT":       "for safety",
		"IMAGE_RECITATION":         "recited",
		"NO_IMAGE":                 "made no image",
		"IMAGE_OTHER":              "does not give",
	} {
		_, err := f.run(backend.Turn{Prompt: "a fox [[finish:" + reason + "]]", Builtins: askImage})
		wantKind(t, err, backend.KindEmpty, 0, says, reason)
	}
	// With text before it, NO_IMAGE and IMAGE_OTHER fail an image turn
	// all the same, quoting what the model said.
	for _, reason := range []string{"NO_IMAGE", "IMAGE_OTHER"} {
		_, err := f.run(backend.Turn{Prompt: "a fox [[finish-text:" + reason + "]]", Model: "gemini-2.5-flash-image", Builtins: askImage})
		wantKind(t, err, backend.KindEmpty, 0, reason, "The model said")
	}
	_, err := f.run(backend.Turn{Prompt: "a fox [[block:IMAGE_SAFETY]]", Builtins: askImage})
	wantKind(t, err, backend.KindInput, 0, "blocked the prompt (IMAGE_SAFETY)")
	if n := f.hist.appends.Load(); n != 0 {
		t.Errorf("%d turns recorded", n)
	}
}

// A model that cannot make images is refused before any request, naming
// the image models the key can use; a list without any says so.
func TestImageModelChoice(t *testing.T) {
	t.Parallel()
	f := imageFixture(t, Options{})
	for _, model := range []string{"gemini-2.5-flash", "flash"} {
		_, err := f.run(backend.Turn{Prompt: "a fox", Model: model, Builtins: askImage})
		wantKind(t, err, backend.KindInput, 0, "does not make images", "gemini-2.5-flash-image, gemini-3-pro-image-preview")
	}
	_, err := f.run(backend.Turn{Prompt: "a fox", Model: "gemini-9-image", Builtins: askImage})
	wantKind(t, err, backend.KindInput, 0, "not in the Gemini API's model list", "gemini-2.5-flash-image")
	if n := len(f.streams()); n != 0 {
		t.Errorf("%d requests sent", n)
	}

	models, err := f.b.Models(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var makers []string
	for _, m := range models {
		if m.Images {
			makers = append(makers, m.Name)
		}
	}
	if strings.Join(makers, ",") != "gemini-2.5-flash-image,gemini-3-pro-image-preview" {
		t.Errorf("the models that make images: %q", makers)
	}

	g := newFixture(t, Options{}) // no image model listed
	_, err = g.run(backend.Turn{Prompt: "a fox", Builtins: askImage})
	wantKind(t, err, backend.KindInput, 0, "has no image model")
	_, err = g.run(backend.Turn{Prompt: "a fox", Model: "gemini-2.5-pro", Builtins: askImage})
	wantKind(t, err, backend.KindInput, 0, "does not make images", "has no image model")

	// A model the list cannot vouch for: the API's own refusal comes
	// back as it is.
	g.fake.SetModels(nil)
	g.restart(Options{})
	_, err = g.run(backend.Turn{Prompt: "a fox", Model: "gemini-2.5-flash", Builtins: askImage})
	wantKind(t, err, backend.KindAPI, 400, fakeapi.NoImageModalityMessage)
}

package fakeapi

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/genai"
)

func imageServer(t *testing.T) *Server {
	s := newServer(t)
	s.SetModels(append(DefaultModels(), ImageModels()...))
	return s
}

// An image answer decodes into the SDK's own types: a text part, then
// inline image parts, the request's image config as the SDK sends it.
func TestImagesThroughSDK(t *testing.T) {
	t.Parallel()
	s := imageServer(t)
	c := sdkClient(t, s)
	cfg := &genai.GenerateContentConfig{ResponseModalities: []string{"TEXT", "IMAGE"},
		ImageConfig: &genai.ImageConfig{AspectRatio: "16:9", ImageSize: "2K"}}
	prompt := genai.NewContentFromText("a cat [[images:2]] [[image-bytes:100]]", genai.RoleUser)
	var parts []*genai.Part
	var finish genai.FinishReason
	for r, err := range c.Models.GenerateContentStream(testCtx(t), "gemini-3-pro-image-preview", []*genai.Content{prompt}, cfg) {
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Candidates) > 0 && r.Candidates[0].Content != nil {
			parts = append(parts, r.Candidates[0].Content.Parts...)
		}
		if len(r.Candidates) > 0 && r.Candidates[0].FinishReason != "" {
			finish = r.Candidates[0].FinishReason
		}
	}
	if finish != genai.FinishReasonStop || len(parts) != 3 {
		t.Fatalf("finish %q, %d parts, want STOP and 3: %v", finish, len(parts), parts)
	}
	if !strings.HasPrefix(parts[0].Text, "fake-api image: a cat") {
		t.Errorf("text %q", parts[0].Text)
	}
	for _, p := range parts[1:] {
		if p.InlineData == nil || p.InlineData.MIMEType != "image/png" || len(p.InlineData.Data) != 100 ||
			!bytes.HasPrefix(p.InlineData.Data, GenImage) {
			t.Errorf("image part %+v", p)
		}
	}
	rec := s.Requests()[len(s.Requests())-1]
	if ar, size := rec.ImageConfig(); !rec.WantsImages() || ar != "16:9" || size != "2K" {
		t.Errorf("request read as images %v, %q, %q", rec.WantsImages(), ar, size)
	}
}

// An edit echoes the input images, in order, and names them.
func TestImageEditThroughSDK(t *testing.T) {
	t.Parallel()
	s := imageServer(t)
	c := sdkClient(t, s)
	in := []byte("\xff\xd8\xff fake jpeg")
	prompt := &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
		genai.NewPartFromText("make it blue"), genai.NewPartFromBytes(in, "image/jpeg")}}
	events, err := streamParts(t, c, "gemini-2.5-flash-image", []*genai.Content{prompt},
		&genai.GenerateContentConfig{ResponseModalities: []string{"TEXT", "IMAGE"}})
	if err != nil {
		t.Fatal(err)
	}
	var parts []*genai.Part
	for _, e := range events {
		parts = append(parts, e...)
	}
	if len(parts) != 2 || parts[0].Text != ImageText("", []InlineImage{{"image/jpeg", in}}) ||
		parts[1].InlineData == nil || parts[1].InlineData.MIMEType != "image/jpeg" || !bytes.Equal(parts[1].InlineData.Data, in) {
		t.Fatalf("parts %+v", parts)
	}
}

// A text model asked for images is refused; each image finish reason and
// block reason decodes as the SDK's own value.
func TestImageRefusalsThroughSDK(t *testing.T) {
	t.Parallel()
	s := imageServer(t)
	c := sdkClient(t, s)
	cfg := &genai.GenerateContentConfig{ResponseModalities: []string{"TEXT", "IMAGE"}}
	_, err := streamParts(t, c, "gemini-2.5-flash", []*genai.Content{genai.NewContentFromText("a cat", genai.RoleUser)}, cfg)
	if code, m := apiCode(err); code != http.StatusBadRequest || m != NoImageModalityMessage {
		t.Errorf("text model: %d %q", code, m)
	}
	for _, fr := range []genai.FinishReason{genai.FinishReasonImageSafety, genai.FinishReasonImageProhibitedContent,
		genai.FinishReasonNoImage, genai.FinishReasonImageRecitation, genai.FinishReasonImageOther} {
		var got genai.FinishReason
		for r, err := range c.Models.GenerateContentStream(testCtx(t), "gemini-2.5-flash-image",
			[]*genai.Content{genai.NewContentFromText("a cat [[finish:"+string(fr)+"]]", genai.RoleUser)}, cfg) {
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Candidates) > 0 {
				got = r.Candidates[0].FinishReason
			}
		}
		if got != fr {
			t.Errorf("finish reason %q, want %q", got, fr)
		}
	}
	var blocked genai.BlockedReason
	for r, err := range c.Models.GenerateContentStream(testCtx(t), "gemini-2.5-flash-image",
		[]*genai.Content{genai.NewContentFromText("a cat [[block:IMAGE_SAFETY]]", genai.RoleUser)}, cfg) {
		if err != nil {
			t.Fatal(err)
		}
		if r.PromptFeedback != nil {
			blocked = r.PromptFeedback.BlockReason
		}
	}
	if blocked != genai.BlockedReasonImageSafety {
		t.Errorf("block reason %q", blocked)
	}
}

package fakeapi

// Images, as the Server fakes Gemini's image models (Nano Banana):
//
//   - [ImageModels] are image models for the model list (add them with
//     SetModels(append(DefaultModels(), ImageModels()...))); their names
//     hold "-image", as the real ones do;
//   - a request whose generationConfig.responseModalities holds IMAGE, to
//     a model whose name has no "-image", is refused with 400
//     INVALID_ARGUMENT and [NoImageModalityMessage];
//   - to an image model, it is answered with a text part ([ImageText]),
//     then one inlineData part per image in an event of its own, then an
//     event with finishReason STOP and usage. The image is [GenImage]
//     (image/png) for a prompt; for an edit (the last user content holds
//     inlineData parts) each image is an input image, echoed, in order,
//     and the text names them (their types and sizes). [[images:N]] asks
//     for N images (0 to 64); [[image-bytes:N]] for images of N bytes
//     each (up to 64 MiB), [GenImage] padded with zeros;
//     [[finish-text:REASON]] ends the answer with that finish reason
//     instead of STOP. A refusal with no content (IMAGE_SAFETY,
//     NO_IMAGE…) comes from [[finish:REASON]], and a blocked prompt from
//     [[block:REASON]], as for any request.
//
// The API's words for a text model asked for images are not documented;
// NoImageModalityMessage is the message it was seen to give.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
)

// GenImage is the PNG image (a 1×1 pixel) of an image answer to a prompt.
var GenImage, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")

// NoImageModalityMessage is the message of the 400 the Server answers a
// request for images to a model that cannot make them.
const NoImageModalityMessage = "Model does not support the requested response modalities: image"

var (
	imagesRE     = regexp.MustCompile(`\[\[images:(\d+)\]\]`)
	imageBytesRE = regexp.MustCompile(`\[\[image-bytes:(\d+)\]\]`)
)

// ImageModels are image models for the Server's model list: a stable one
// and a preview that thinks.
func ImageModels() []Model {
	gen := []string{"generateContent", "countTokens"}
	return []Model{
		{Name: "models/gemini-2.5-flash-image", DisplayName: "Nano Banana", InputTokenLimit: 65536, OutputTokenLimit: 32768, Methods: gen},
		{Name: "models/gemini-3-pro-image-preview", DisplayName: "Nano Banana Pro", InputTokenLimit: 65536, OutputTokenLimit: 32768, Methods: gen, Thinking: true},
	}
}

// IsImageModel says whether the Server makes images with model.
func IsImageModel(model string) bool { return strings.Contains(model, "-image") }

// ImageText is the text part of an image answer: for a prompt, what was
// asked; for an edit, the input images' types and sizes, in order.
func ImageText(prompt string, inputs []InlineImage) string {
	if len(inputs) == 0 {
		return "fake-api image: " + firstRunes(prompt, 80)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "fake-api image: edited %d input image(s):", len(inputs))
	for _, in := range inputs {
		fmt.Fprintf(&b, " %s/%d", in.MIMEType, len(in.Data))
	}
	return b.String()
}

// InlineImage is an image part of a request or an answer.
type InlineImage struct {
	MIMEType string
	Data     []byte
}

// imageRequest is what the Server reads of a request for images.
type imageRequest struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			InlineData *struct {
				MIMEType string `json:"mimeType"`
				Data     []byte `json:"data"`
			} `json:"inlineData"`
		} `json:"parts"`
	} `json:"contents"`
	GenerationConfig struct {
		ResponseModalities []string `json:"responseModalities"`
		ImageConfig        *struct {
			AspectRatio string `json:"aspectRatio"`
			ImageSize   string `json:"imageSize"`
		} `json:"imageConfig"`
	} `json:"generationConfig"`
}

func imageRequestOf(body []byte) imageRequest {
	var r imageRequest
	_ = json.Unmarshal(body, &r)
	return r
}

// WantsImages says whether the request asked for images
// (responseModalities holds IMAGE).
func (r Request) WantsImages() bool {
	for _, m := range imageRequestOf(r.Body).GenerationConfig.ResponseModalities {
		if strings.EqualFold(m, "IMAGE") {
			return true
		}
	}
	return false
}

// ImageConfig is the request's imageConfig aspectRatio and imageSize, ""
// for none.
func (r Request) ImageConfig() (aspectRatio, size string) {
	if ic := imageRequestOf(r.Body).GenerationConfig.ImageConfig; ic != nil {
		return ic.AspectRatio, ic.ImageSize
	}
	return "", ""
}

// InputImages are the image parts of the request's last user content.
func (r Request) InputImages() []InlineImage {
	cs := imageRequestOf(r.Body).Contents
	for i := len(cs) - 1; i >= 0; i-- {
		if cs[i].Role != "user" && cs[i].Role != "" {
			continue
		}
		var out []InlineImage
		for _, p := range cs[i].Parts {
			if p.InlineData != nil && strings.HasPrefix(p.InlineData.MIMEType, "image/") {
				out = append(out, InlineImage{MIMEType: p.InlineData.MIMEType, Data: p.InlineData.Data})
			}
		}
		return out
	}
	return nil
}

// image answers a request for images, and says whether it did.
func (s *Server) image(w http.ResponseWriter, rec Request) bool {
	if !rec.WantsImages() {
		return false
	}
	if !IsImageModel(rec.Model) {
		s.fail(w, rec, http.StatusBadRequest, NoImageModalityMessage)
		return true
	}
	n := 1
	if m := imagesRE.FindStringSubmatch(rec.LastUserText); m != nil {
		n, _ = strconv.Atoi(m[1])
		n = min(n, 64)
	}
	size := 0
	if m := imageBytesRE.FindStringSubmatch(rec.LastUserText); m != nil {
		size, _ = strconv.Atoi(m[1])
		size = min(size, 64<<20)
	}
	inputs := rec.InputImages()
	rec.Status = http.StatusOK
	rec.Answer = ImageText(rec.LastUserText, inputs)
	s.record(rec)
	frames := [][]byte{eventJSON(map[string]any{"text": rec.Answer})}
	for i := range n {
		img := InlineImage{MIMEType: "image/png", Data: GenImage}
		if len(inputs) > 0 {
			img = inputs[i%len(inputs)]
		}
		if size > len(img.Data) {
			img.Data = append(append([]byte(nil), img.Data...), make([]byte, size-len(img.Data))...)
		}
		frames = append(frames, eventJSON(map[string]any{"inlineData": map[string]any{
			"mimeType": img.MIMEType, "data": base64.StdEncoding.EncodeToString(img.Data)}}))
	}
	finish := "STOP"
	if m := endRE.FindStringSubmatch(rec.LastUserText); m != nil {
		finish = m[1]
	}
	last, _ := json.Marshal(map[string]any{
		"candidates": []any{map[string]any{"finishReason": finish, "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": CountTokens(rec.LastUserText),
			"candidatesTokenCount": 1290 * n, "totalTokenCount": CountTokens(rec.LastUserText) + 1290*n},
	})
	s.stream(w, withVersion(append(frames, last), rec)...)
	return true
}

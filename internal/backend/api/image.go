package api

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
)

// Images (Turn.Image): a turn asks an image model (Gemini's "Nano Banana"
// models, gemini-2.5-flash-image, gemini-3-pro-image-preview…) for images
// beside its text, with responseModalities TEXT and IMAGE. The prompt's
// media (Turn.Media) are its input images, for an edit. The images come
// back as inline parts, returned in Answer.Images as the images of code
// execution are (extras.inline: at most maxImagesPerAnswer, every byte
// within the turn's byte budget) and never resent on later turns.
//
// Which models make images, the model list decides: the models that
// generate content and whose name holds "-image" (the Imagen models,
// "imagen-…", answer another method, predict, and are not used). A turn
// that names no model gets the newest stable image model of the list, or
// its newest preview when it has no stable one.
//
// The finish reasons of an image turn: IMAGE_SAFETY and
// IMAGE_PROHIBITED_CONTENT are refusals for safety, IMAGE_RECITATION one
// for recitation (finishError, as for any turn); NO_IMAGE and IMAGE_OTHER
// fail the turn, whatever text came (imageFinishError); a blocked prompt
// (promptFeedback.blockReason, IMAGE_SAFETY among them) fails as any
// blocked prompt does.

// imageNameMark is what the name of a model that makes images holds.
const imageNameMark = "-image"

// makesImages says whether the model list's mi makes images.
func makesImages(mi modelInfo) bool {
	return mi.generates && strings.Contains(mi.name, imageNameMark) && !strings.HasPrefix(mi.name, "imagen")
}

// imageModels are the names of the models of the list that make images,
// the stable ones first, each group newest first (by name).
func (b *Backend) imageModels(ctx context.Context) ([]string, error) {
	list, err := b.models.all(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, mi := range list {
		if makesImages(mi) {
			names = append(names, mi.name)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		si, sj := stableImage(names[i]), stableImage(names[j])
		if si != sj {
			return si
		}
		return names[i] > names[j]
	})
	return names, nil
}

// stableImage says whether an image model's name has no -preview or -exp.
func stableImage(name string) bool {
	return !strings.Contains(name, "-preview") && !strings.Contains(name, "-exp")
}

// imageModel returns the model an image turn runs on: name, checked
// against the model list, or, for "", the first of imageModels.
func (b *Backend) imageModel(parent, ctx context.Context, name string) (string, error) {
	names, err := b.imageModels(ctx)
	if err != nil {
		be := b.classify(parent, ctx, err, name)
		if be.Kind != backend.KindFailed && be.Kind != backend.KindAPI {
			return "", be
		}
		if name == "" {
			be.Reason = "image: the Gemini API's model list, which says which models make images, could not be read: " +
				be.Reason + "; name an image model (e.g. gemini-2.5-flash-image)"
			return "", be
		}
		b.log.Warn("gemini api: the model list could not be had; the image model goes unchecked", "model", name, "err", be.Reason)
		return name, nil
	}
	if name == "" {
		if len(names) == 0 {
			return "", noImageModels("image: no model was named, and")
		}
		return names[0], nil
	}
	if IsAlias(name) {
		return "", cannotImage(name, names)
	}
	mi, found, known, err := b.models.lookup(ctx, name)
	switch {
	case err != nil || !known:
		return name, nil // checked by Run as any model
	case !found:
		if len(names) == 0 {
			return "", noImageModels(fmt.Sprintf("image: model %q is not in the Gemini API's model list, and", name))
		}
		return "", newError(backend.KindInput, nil, "image: model %q is not in the Gemini API's model list for these credentials; "+
			"the image models they can use: %s", name, strings.Join(names, ", "))
	case !makesImages(mi):
		return "", cannotImage(name, names)
	}
	return name, nil
}

func cannotImage(name string, names []string) error {
	if len(names) == 0 {
		return noImageModels(fmt.Sprintf("image: model %q does not make images, and", name))
	}
	return newError(backend.KindInput, nil, "image: model %q does not make images; the image models these credentials can use: %s "+
		"(leave model out for %s)", name, strings.Join(names, ", "), names[0])
}

func noImageModels(start string) error {
	return newError(backend.KindInput, nil, "%s the Gemini API's model list for these credentials has no image model "+
		"(a Gemini model whose name holds %s, such as gemini-2.5-flash-image); check the key's project and region", start, imageNameMark)
}

// imageConfig asks cfg's model for images as r says.
func imageConfig(r *backend.ImageRequest, cfg *genai.GenerateContentConfig) {
	cfg.ResponseModalities = []string{string(genai.ModalityText), string(genai.ModalityImage)}
	if r.AspectRatio != "" || r.Size != "" {
		cfg.ImageConfig = &genai.ImageConfig{AspectRatio: r.AspectRatio, ImageSize: r.Size}
	}
}

// imageFinishError is the error of an image turn's answer whose finish
// reason says it holds no image; nil for the others. text is what the
// model said, quoted in the error.
func imageFinishError(fr genai.FinishReason, text string) *backend.Error {
	said := ""
	if t := strings.TrimSpace(text); t != "" {
		said = fmt.Sprintf(" The model said: %q", msg.Clip(t, 500))
	}
	switch fr {
	case genai.FinishReasonNoImage:
		return newError(backend.KindEmpty, nil, "image: the model made no image (finish reason NO_IMAGE); ask for the "+
			"picture plainly (\"a picture of …\", \"change … in this image\"), or try again.%s", said)
	case genai.FinishReasonImageOther:
		return newError(backend.KindEmpty, nil, "image: the model could not make the image, for a reason the Gemini API "+
			"does not give (finish reason IMAGE_OTHER); try again, or rephrase the prompt.%s", said)
	}
	return nil
}

// noImageNote is the note of an image turn answered with text only.
const noImageNote = "image: the model answered with text only and made no image; ask for the picture plainly, or try again"

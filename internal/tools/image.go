package tools

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/imagesave"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/render"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
)

// The image tool makes or edits pictures with one of Gemini's image models
// (the API backend's image turns, backend.Builtins.Image; the Gemini CLI
// backends refuse them). Its input images are files, read by the same
// file context as chat's (images become the turn's media). The pictures
// come back as MCP image content after the model's text; with save_to,
// each is also saved into the project root, once the user has said yes
// when asked the way a downstream tool call is confirmed (elicitation, or
// an input request from protocol 2026-07-28 on; see imagesave.Save,
// saveImages).
//
// Each call is a conversation of its own: it runs as a new session, which
// records the turn's text but not its pictures (the API backend keeps no
// image in history), so the result names no sessionId and the tool takes
// none. To edit a picture, save it and call image again with it in files.

// AspectRatios are the aspect ratios the Gemini API's image models take
// (imageConfig.aspectRatio, as the image generation guide lists them).
var AspectRatios = []string{"1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9"}

// ImageSizes are the image sizes the Gemini API takes
// (imageConfig.imageSize; only some models take one).
var ImageSizes = []string{"1K", "2K", "4K"}

// ImageInput is image's arguments; its tags are image's input schema.
type ImageInput struct {
	Prompt      string   `json:"prompt" jsonschema:"What to draw, or how to change the input images."`
	Files       []string `json:"files,omitempty" jsonschema:"Optional: input images (PNG, JPEG, WebP, HEIC, HEIF) inside the project root, to edit or draw from; other files are sent as context."`
	Model       string   `json:"model,omitempty" jsonschema:"Optional: the Gemini image model (e.g. 'gemini-2.5-flash-image'). Omit for the newest image model the API key can use."`
	AspectRatio string   `json:"aspect_ratio,omitempty" jsonschema:"Optional: the images' aspect ratio. Omit for the model's default."`
	Size        string   `json:"size,omitempty" jsonschema:"Optional: the images' size, on the models that take one. Omit for the model's default (1K)."`
	SaveTo      string   `json:"save_to,omitempty" jsonschema:"Optional: a file path inside the project root to save the images to (several images get numbered names: name-1.png, name-2.png…). The user is asked to confirm each save, and again before an existing file is replaced; a client that cannot ask its user gets the images back, unsaved."`
}

// extendSchema gives aspect_ratio and size their enums, which struct tags
// cannot.
func (*ImageInput) extendSchema(s *jsonschema.Schema) {
	for name, values := range map[string][]string{"aspect_ratio": AspectRatios, "size": ImageSizes} {
		p := s.Properties[name]
		p.Enum = make([]any, len(values))
		for i, v := range values {
			p.Enum[i] = v
		}
	}
}

// AddImage adds image to s.
func AddImage(s *mcp.Server, d *Deps) {
	s.AddTool(imageTool(), handle(d.image))
}

func imageTool() *mcp.Tool {
	return &mcp.Tool{
		Name: "image",
		Description: "Make or edit pictures with one of Google Gemini's image models (Gemini API backend only). " +
			"Give a prompt, and input images in files to edit them. The pictures come back as image content after the model's text; " +
			"_meta.model names the model and _meta.images counts the pictures. With save_to they are also saved into the project root, " +
			"after the user confirms. Each call stands alone: to change a picture, pass it in files of a new call.",
		InputSchema: inputTypeOf[ImageInput]().sc.CloneSchemas(),
		Annotations: &mcp.ToolAnnotations{Title: "Make images with Gemini", OpenWorldHint: ptr(true)},
	}
}

func (d *Deps) image(ctx context.Context, req *mcp.CallToolRequest, in ImageInput) (*mcp.CallToolResult, any, error) {
	if err := d.checkCommon(in.Prompt, in.Model, ""); err != nil {
		return toolerr.Failure(err), nil, nil
	}
	r, err := d.imageRequest(req, in)
	if err != nil {
		return toolerr.Failure(err), nil, nil
	}
	return d.do(ctx, r), nil, nil
}

// imageRequest is image's turn, from its input: a new session, asking
// for images, with the files as its media.
func (d *Deps) imageRequest(req *mcp.CallToolRequest, in ImageInput) (conversation.Request, error) {
	if in.AspectRatio != "" && !slices.Contains(AspectRatios, in.AspectRatio) {
		return conversation.Request{}, fmt.Errorf("aspect_ratio must be one of %s, not %q; omit it for the model's default",
			strings.Join(AspectRatios, ", "), clipArg(in.AspectRatio))
	}
	if in.Size != "" && !slices.Contains(ImageSizes, in.Size) {
		return conversation.Request{}, fmt.Errorf("size must be one of %s, not %q; omit it for the model's default",
			strings.Join(ImageSizes, ", "), clipArg(in.Size))
	}
	if in.SaveTo != "" {
		if err := d.checkSaveTo(in.SaveTo); err != nil {
			return conversation.Request{}, err
		}
	}
	r := conversation.Request{Call: req, Turn: backend.Turn{Prompt: in.Prompt, Model: in.Model,
		Builtins: backend.Builtins{Image: &backend.ImageRequest{AspectRatio: in.AspectRatio, Size: in.Size}}}}
	d.withFiles(&r, in.Prompt, in.Files, nil, "")
	r.Render = func(ctx context.Context, o conversation.Outcome) (*mcp.CallToolResult, error) {
		return d.imageResult(ctx, in.SaveTo, o), nil
	}
	return r, nil
}

// checkSaveTo refuses a save_to that no image could be saved to, before
// Gemini runs.
func (d *Deps) checkSaveTo(p string) error {
	if d.ProjectRoot == "" {
		return errors.New("save_to: this server has no project root to save images into; leave save_to out and keep the images from the result")
	}
	return imagesave.Check(imagesave.Request{Root: d.ProjectRoot, Forbidden: d.Forbidden, Path: p,
		MIMEType: imagesave.TypeOf(p), Data: []byte{0}})
}

// imageResult is image's result of an answer: the model's text, the
// images as image content, and _meta: the model, the number of images,
// the paths saved and why any was not.
func (d *Deps) imageResult(ctx context.Context, saveTo string, o conversation.Outcome) *mcp.CallToolResult {
	ans := o.Answer
	out := &mcp.CallToolResult{Meta: mcp.Meta{"images": len(ans.Images)}}
	if ans.Text != "" {
		out.Content = append(out.Content, &mcp.TextContent{Text: ans.Text})
	}
	if ans.Model != "" {
		out.Meta["model"] = ans.Model
	}
	if ans.Usage != nil {
		out.Meta["usage"] = ans.Usage
	}
	if len(ans.NotApplied) > 0 {
		out.Meta["notApplied"] = ans.NotApplied
	}
	if ans.FinishReason != "" {
		out.Meta["finishReason"] = ans.FinishReason
	}
	if ans.Incomplete != "" {
		out.Content = append(out.Content, &mcp.TextContent{Text: incompleteNote(ans.Incomplete)})
		out.Meta["incomplete"] = true
	}
	render.AddBuiltins(out, ans)
	if saveTo != "" && len(ans.Images) > 0 {
		saved, notes := d.saveImages(ctx, o.Ask, saveTo, ans.Images)
		out.Meta["saved"] = saved
		if len(notes) > 0 {
			out.Meta["notSaved"] = notes
			out.Content = append(out.Content, &mcp.TextContent{Text: "[gemini-mcp-server: " + strings.Join(notes, "; ") + "]"})
		}
	}
	if o.Unsaved != "" {
		render.AddUnsaved(out, o.Unsaved)
	}
	if len(out.Content) == 0 {
		// No text, no image: the result still says what came.
		out.Content = []mcp.Content{&mcp.TextContent{Text: "[gemini-mcp-server: the model answered with neither text nor image]"}}
	}
	return out
}

// saveImages saves images to saveTo (numbered when there are several),
// each after the user's yes, asked with ask. It returns the paths saved,
// relative to the project root, and a note for each image that was not.
func (d *Deps) saveImages(ctx context.Context, ask conversation.Asker, saveTo string, images []backend.Image) ([]string, []string) {
	confirm, why := saveConfirm(ask)
	saved := []string{}
	var notes []string
	if confirm == nil {
		return saved, []string{"the images were not saved to " + fmt.Sprintf("%q", clipArg(saveTo)) + ": " + why +
			", and nothing is saved without the user's yes; save them from this result"}
	}
	reqs := make([]imagesave.Request, len(images))
	for i, im := range images {
		p := saveTo
		if len(images) > 1 {
			p = numbered(saveTo, i+1)
		}
		reqs[i] = imagesave.Request{Root: d.ProjectRoot, Forbidden: d.Forbidden, Path: p, MIMEType: im.MIMEType, Data: im.Data}
	}
	// One question for them all (and one more to replace files), not two
	// an image: a client answers only so many in one call.
	done, errs := imagesave.SaveAll(ctx, reqs, confirm)
	for i, err := range errs {
		if err != nil {
			notes = append(notes, fmt.Sprintf("image %d: %v", i+1, err))
			continue
		}
		saved = append(saved, done[i].Rel)
	}
	return saved, notes
}

// numbered is p with n before its extension: out.png → out-2.png.
func numbered(p string, n int) string {
	ext := filepath.Ext(p)
	if strings.ContainsAny(ext, `/\`) {
		ext = ""
	}
	return fmt.Sprintf("%s-%d%s", strings.TrimSuffix(p, ext), n, ext)
}

func clipArg(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}

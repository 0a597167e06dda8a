package api

import (
	"context"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// CountTokens counts the tokens of text as the default model reads them,
// with one countTokens request.
func (b *Backend) CountTokens(parent context.Context, text string) (int, error) {
	ctx := parent
	if b.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(parent, b.timeout)
		defer cancel()
	}
	model, err := b.resolveModel(parent, ctx, b.model)
	if err != nil {
		return 0, err
	}
	n, err := b.countTokens(ctx, model, []*genai.Content{genai.NewContentFromText(text, genai.RoleUser)})
	if err != nil {
		return 0, b.classify(parent, ctx, err, model)
	}
	return n, nil
}

// countTokens is one countTokens request.
func (b *Backend) countTokens(ctx context.Context, model string, contents []*genai.Content) (n int, err error) {
	defer func() {
		if v := recover(); v != nil {
			n, err = 0, sdkPanic(v)
		}
	}()
	res, err := b.client.Models.CountTokens(ctx, model, contents, nil)
	if err != nil {
		return 0, err
	}
	return int(res.TotalTokens), nil
}

// checkFits refuses a conversation the model cannot take in. Counting
// tokens is a request of its own, so it is made only when the
// conversation could be too long: a token is at least one byte, so text
// shorter than the limit in bytes fits.
func (b *Backend) checkFits(parent, ctx context.Context, model string, limit int, system *genai.Content, contents []*genai.Content) error {
	all := contents
	if system != nil {
		// The Gemini API counts no system instruction of its own; as the
		// model reads it, it counts as one more content.
		all = append([]*genai.Content{system}, contents...)
	}
	size := 0
	for _, c := range all {
		size += 8 // the role and framing of each content
		for _, p := range c.Parts {
			size += len(p.Text)
		}
	}
	if size < limit {
		return nil
	}
	n, err := b.countTokens(ctx, model, all)
	if err != nil {
		be := b.classify(parent, ctx, err, model)
		if be.Kind == backend.KindCancelled || be.Kind == backend.KindTimeout || be.Kind == backend.KindAuth {
			return be
		}
		b.log.Warn("gemini api: tokens could not be counted; sending unchecked", "err", be.Reason)
		return nil
	}
	if n > limit {
		return newError(backend.KindInput, nil, "this conversation is %d tokens with the new prompt, more than "+
			"the %d tokens model %s takes in; start a new conversation with chat (summarise this one in its "+
			"prompt if needed), or use a model with a larger input", n, limit, model)
	}
	return nil
}

// InputLimit is how many tokens the default model takes in, as the API's
// list of models says; 0 when that is not known.
func (b *Backend) InputLimit(ctx context.Context) int {
	model, err := b.resolveModel(ctx, ctx, b.model)
	if err != nil {
		return 0
	}
	mi, found, known, err := b.models.lookup(ctx, model)
	if err != nil || !found || !known {
		return 0
	}
	return mi.inputLimit
}

package api

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// progressEvery is the least time between two progress reports while an
// answer streams in; the first is sent at once.
const progressEvery = time.Second

type streamResult struct {
	text  string
	usage *backend.Usage
	// calls are the function calls Gemini asked for, and parts its answer
	// as it is to be sent back with their results: the text, then the
	// function call parts as received (with their thought signatures,
	// which Gemini 3 wants back).
	calls []*genai.FunctionCall
	parts []*genai.Part
	// incomplete says the stream ended cleanly but with no finish reason:
	// the answer may be cut short.
	incomplete bool
}

// streamWithRetries streams the answer, trying again after a 429 or 5xx
// that came before any of the answer did, as long as the call's time
// allows.
func (b *Backend) streamWithRetries(parent, ctx context.Context, model string, contents []*genai.Content, cfg *genai.GenerateContentConfig, obs backend.Observer) (*streamResult, error) {
	backoff := b.backoff
	recut := false
	for attempt := 0; ; attempt++ {
		res, received, err := b.stream(ctx, model, contents, cfg, obs)
		if err == nil && res.incomplete && !recut && b.retries > 0 {
			// As the Gemini CLI does with a stream that ended without a
			// finish reason: ask once more (billed again), and give the
			// second answer, whole or marked cut.
			recut = true
			b.log.Info("gemini api: the answer's stream ended without a finish reason; asking again")
			obs.Activity("the answer's stream ended without a finish reason; asking again")
			continue
		}
		if err == nil {
			return res, nil
		}
		var be *backend.Error
		if errors.As(err, &be) {
			return nil, be
		}
		if ctx.Err() != nil {
			return nil, contextError(parent, b.timeout)
		}
		e, ok := asAPIError(err)
		if !ok || !retryable(e.Code) || received || attempt >= b.retries {
			return nil, b.classify(parent, ctx, err, model)
		}
		wait, asked := retryDelay(e)
		if !asked {
			wait = backoff
			backoff = min(2*backoff, maxBackoff)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait || wait > maxRetryWait {
			// Waiting would outlast the call: say so now, with the delay.
			return nil, b.classify(parent, ctx, err, model)
		}
		b.log.Info("gemini api: retrying", "status", e.Code, "wait", wait, "attempt", attempt+1)
		obs.Activity(fmt.Sprintf("the Gemini API answered %d; retrying in %s", e.Code, wait.Round(time.Millisecond)))
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return nil, contextError(parent, b.timeout)
		}
	}
}

// stream makes one streaming request. received says whether any of the
// answer arrived, after which a failure is not retried.
func (b *Backend) stream(ctx context.Context, model string, contents []*genai.Content, cfg *genai.GenerateContentConfig, obs backend.Observer) (res *streamResult, received bool, err error) {
	// Leaving the loop early (a cap) must end the request at once.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer func() {
		// The SDK panics on some malformed events (v1.77.0: a candidate
		// that is null, converting the frame in this goroutine): one bad
		// answer fails its call, not the server.
		if v := recover(); v != nil {
			b.log.Error("gemini api: the SDK panicked on the API's answer", "panic", v)
			res, err = nil, sdkPanic(v)
		}
	}()

	var text strings.Builder
	var callParts []*genai.Part
	parts := 0
	var usage *genai.GenerateContentResponseUsageMetadata
	var finish genai.FinishReason
	var lastReport time.Time
	for chunk, err := range b.client.Models.GenerateContentStream(ctx, model, contents, cfg) {
		if err != nil {
			return nil, received, err
		}
		if ctx.Err() != nil {
			// The call's time is up: a peer that keeps sending must not
			// keep it going.
			return nil, received, ctx.Err()
		}
		if chunk == nil {
			continue
		}
		if pf := chunk.PromptFeedback; pf != nil && pf.BlockReason != "" {
			return nil, received, newError(backend.KindInput, nil, "the Gemini API blocked the prompt (%s); "+
				"rephrase it, or start a new conversation if earlier turns are the cause", pf.BlockReason)
		}
		if chunk.UsageMetadata != nil {
			usage = chunk.UsageMetadata
		}
		if len(chunk.Candidates) == 0 || chunk.Candidates[0] == nil {
			continue
		}
		c := chunk.Candidates[0]
		if c.FinishReason != "" {
			finish = c.FinishReason
		}
		if c.Content != nil {
			if parts += len(c.Content.Parts); parts > maxPartsPerAnswer {
				return nil, received, newError(backend.KindOutputTooBig, nil, "the Gemini API's answer had more than %d "+
					"parts, this server's cap, and was stopped; try again", maxPartsPerAnswer)
			}
			for _, p := range c.Content.Parts {
				if p != nil && p.FunctionCall != nil {
					received = true
					if len(callParts) == MaxCallsPerAnswer {
						return nil, received, newError(backend.KindOutputTooBig, nil, "Gemini asked for more than %d "+
							"function calls in one answer, this server's cap, and was stopped; try again, or ask for "+
							"fewer tool calls at once", MaxCallsPerAnswer)
					}
					callParts = append(callParts, p)
					continue
				}
				if p == nil || p.Thought || p.Text == "" {
					continue
				}
				received = true
				text.WriteString(p.Text)
			}
		}
		if received && time.Since(lastReport) >= progressEvery {
			lastReport = time.Now()
			obs.Activity(fmt.Sprintf("receiving the answer: %d characters", text.Len()))
		}
	}
	switch finish {
	case genai.FinishReasonSafety, genai.FinishReasonProhibitedContent, genai.FinishReasonBlocklist,
		genai.FinishReasonSPII, genai.FinishReasonImageSafety:
		return nil, received, newError(backend.KindEmpty, nil, "the Gemini API stopped the answer for safety "+
			"(finish reason %s); rephrase the prompt", finish)
	case genai.FinishReasonRecitation:
		return nil, received, newError(backend.KindEmpty, nil, "the Gemini API stopped the answer because it "+
			"recited existing material (finish reason RECITATION); ask for it in other words")
	}
	if text.Len() == 0 && len(callParts) == 0 {
		reason := string(finish)
		if reason == "" {
			reason = "none"
		}
		return nil, received, newError(backend.KindEmpty, nil, "the Gemini API answered no text (finish reason %s); try again", reason)
	}
	res = &streamResult{text: text.String(), incomplete: finish == ""}
	if len(callParts) > 0 {
		if text.Len() > 0 {
			res.parts = append(res.parts, genai.NewPartFromText(text.String()))
		}
		res.parts = append(res.parts, callParts...)
		for _, p := range callParts {
			res.calls = append(res.calls, p.FunctionCall)
		}
	}
	if usage != nil {
		res.usage = &backend.Usage{
			PromptTokens:   int(usage.PromptTokenCount),
			OutputTokens:   int(usage.CandidatesTokenCount),
			ThinkingTokens: int(usage.ThoughtsTokenCount),
			CachedTokens:   int(usage.CachedContentTokenCount),
		}
	}
	return res, received, nil
}

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
	// calls are the function calls Gemini asked for, and parts its whole
	// answer as it is to be sent back on later requests (see answerParts):
	// the text, merged from the stream's events, and the function call
	// parts as received, each with the thought signature it came with,
	// which Gemini 3 wants back.
	calls []*genai.FunctionCall
	parts []*genai.Part
	// incomplete says the stream ended cleanly but with no finish reason:
	// the answer may be cut short.
	incomplete bool
	// finish is the answer's finish reason ("" for none; see endingOf).
	finish genai.FinishReason
	// modelVersion is the model that answered, as the API names it
	// (without "models/"); "" when it named none.
	modelVersion string
	// meta is the grounding and URL context metadata of the answer.
	meta metadata
	// runs, images and thoughts are the code the model ran and its
	// results, the images it made, and its thought summaries (see
	// extras).
	runs     []backend.CodeRun
	images   []backend.Image
	thoughts string
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
		if ok && !received && dailyQuota(e) {
			// A daily quota does not reset within the call, whatever
			// delay the API names: waiting is in vain.
			return nil, markExhausted(b.classify(parent, ctx, err, model), e)
		}
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
			be := b.classify(parent, ctx, err, model)
			if asked {
				// A delay the API named: a quota exhausted for this call.
				be = markExhausted(be, e)
			}
			return nil, be
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
	var ap answerParts
	parts := 0
	var usage *genai.GenerateContentResponseUsageMetadata
	var finish genai.FinishReason
	var version string
	var lastReport time.Time
	reported := 0 // the length of the text last told obs
	var meta metadata
	if cfg != nil {
		for _, t := range cfg.Tools {
			if t != nil && t.FileSearch != nil {
				meta.stores = append(meta.stores, t.FileSearch.FileSearchStoreNames...)
			}
		}
	}
	var x extras
	for chunk, err := range b.client.Models.GenerateContentStream(ctx, model, contents, cfg) {
		if why, ok := undecodable(err); ok {
			return nil, received, newError(backend.KindBadOutput, err, "the Gemini API's answer could not be read (%s); "+
				"nothing was recorded; try again", why)
		}
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
				"rephrase it, or start a new conversation if earlier turns are the cause", apiWords(string(pf.BlockReason), 64))
		}
		if chunk.UsageMetadata != nil {
			usage = chunk.UsageMetadata
		}
		if chunk.ModelVersion != "" {
			version = apiWords(chunk.ModelVersion, 128)
		}
		if len(chunk.Candidates) == 0 || chunk.Candidates[0] == nil {
			continue
		}
		c := chunk.Candidates[0]
		if c.FinishReason != "" {
			// The API's word, which a reason the SDK does not know
			// takes into the answer's note and _meta as it came.
			finish = genai.FinishReason(apiWords(string(c.FinishReason), 64))
		}
		meta.add(c)
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
					ap.add(p)
					continue
				}
				if p == nil {
					continue
				}
				if p.Thought {
					// A thought summary: never part of the answer, nor
					// of the conversation.
					x.thought(p.Text)
					continue
				}
				if p.ExecutableCode != nil || p.CodeExecutionResult != nil {
					received = true
					ap.add(p)
					x.code(p, &text)
					continue
				}
				if p.InlineData != nil {
					// An image the model's code made: returned, not
					// resent on later turns.
					received = true
					x.inline(p.InlineData, &text)
					continue
				}
				// A text part may be empty and carry only the answer's
				// thought signature (Gemini 3 sends it so, in the last
				// event of a stream): it is kept for the history.
				ap.add(p)
				if p.Text == "" {
					continue
				}
				received = true
				text.WriteString(p.Text)
			}
		}
		if text.Len() != reported {
			// The text so far, for a background job's output (a
			// strings.Builder's String copies nothing).
			reported = text.Len()
			backend.AnswerSoFar(obs, text.String())
		}
		if received && time.Since(lastReport) >= progressEvery {
			lastReport = time.Now()
			obs.Activity(fmt.Sprintf("receiving the answer: %d characters", text.Len()))
		}
	}
	if err := finishError(finish, text.Len() > 0 || len(callParts) > 0); err != nil {
		return nil, received, err
	}
	res = &streamResult{text: text.String(), incomplete: finish == "", finish: finish, parts: ap.done(), meta: meta,
		modelVersion: strings.TrimPrefix(version, "models/"), runs: x.runs, images: x.images, thoughts: x.thoughtsText()}
	for _, p := range callParts {
		res.calls = append(res.calls, p.FunctionCall)
	}
	if usage != nil {
		res.usage = &backend.Usage{
			PromptTokens:   int(usage.PromptTokenCount),
			OutputTokens:   int(usage.CandidatesTokenCount),
			ThinkingTokens: int(usage.ThoughtsTokenCount),
			CachedTokens:   int(usage.CachedContentTokenCount),

			ToolUsePromptTokens: int(usage.ToolUsePromptTokenCount),
			TotalTokens:         int(usage.TotalTokenCount),
		}
	}
	return res, received, nil
}

// answerParts gathers the parts of a streamed answer as they are to be
// sent back in the conversation: consecutive text is merged into one
// part, function calls and the code the model ran in the API's sandbox
// (executableCode, codeExecutionResult) are kept as they came, and a thought signature is
// kept on the part it came with. A signature that came on a text part
// (Gemini 3 puts one on the last part of an answer, in a stream often an
// empty text part of its own) goes with the text merged so far, which it
// ends: an empty part with only a signature is one the API may refuse.
// A signature with no text to go with (after a function call part, which
// carries its own) is dropped: the API refuses a part with no data.
type answerParts struct {
	parts []*genai.Part
	text  strings.Builder
}

func (a *answerParts) add(p *genai.Part) {
	if p.FunctionCall != nil || p.ExecutableCode != nil || p.CodeExecutionResult != nil {
		a.flush(nil)
		a.parts = append(a.parts, p)
		return
	}
	a.text.WriteString(p.Text)
	if p.ThoughtSignature != nil {
		a.flush(p.ThoughtSignature)
	}
}

// flush ends the text merged so far as one part, with sig.
func (a *answerParts) flush(sig []byte) {
	if a.text.Len() == 0 {
		if sig == nil {
			return
		}
		// Only a signature: it goes on the text part before it when that
		// has none.
		if n := len(a.parts); n > 0 && a.parts[n-1].Text != "" && a.parts[n-1].ThoughtSignature == nil {
			a.parts[n-1].ThoughtSignature = sig
		}
		return
	}
	a.parts = append(a.parts, &genai.Part{Text: a.text.String(), ThoughtSignature: sig})
	a.text.Reset()
}

func (a *answerParts) done() []*genai.Part {
	a.flush(nil)
	return a.parts
}

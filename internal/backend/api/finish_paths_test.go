package api

import (
	"errors"
	"testing"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// allFinishReasons are the finish reasons of the genai SDK (v1.77.0), and
// one it does not know.
var allFinishReasons = []genai.FinishReason{genai.FinishReasonUnspecified, genai.FinishReasonStop, genai.FinishReasonMaxTokens,
	genai.FinishReasonSafety, genai.FinishReasonRecitation, genai.FinishReasonLanguage, genai.FinishReasonOther,
	genai.FinishReasonBlocklist, genai.FinishReasonProhibitedContent, genai.FinishReasonSPII, genai.FinishReasonMalformedFunctionCall,
	genai.FinishReasonImageSafety, genai.FinishReasonUnexpectedToolCall, genai.FinishReasonTooManyToolCalls,
	genai.FinishReasonImageProhibitedContent, genai.FinishReasonNoImage, genai.FinishReasonImageRecitation,
	genai.FinishReasonImageOther, genai.FinishReasonContinuation, "A_REASON_FROM_THE_FUTURE"}

// Every finish reason ending an image turn whose images came: either the
// turn fails with a typed error and records nothing, or it returns its
// images, said to be cut unless the reason is STOP.
func TestImageTurnEveryFinishReason(t *testing.T) {
	t.Parallel()
	f := imageFixture(t, Options{})
	for _, fr := range allFinishReasons {
		before := f.hist.appends.Load()
		a, err := f.run(backend.Turn{Prompt: "a fox [[images:2]] [[finish-text:" + string(fr) + "]]", Model: "gemini-2.5-flash-image", Builtins: askImage})
		var be *backend.Error
		switch {
		case err != nil && !errors.As(err, &be):
			t.Errorf("%s: an untyped error %v", fr, err)
		case err != nil && f.hist.appends.Load() != before:
			t.Errorf("%s: the failed turn was recorded", fr)
		case err != nil:
			if finishError(fr, true) == nil && imageFinishError(fr, "") == nil {
				t.Errorf("%s: failed (%v), though its reason does not fail an answer", fr, err)
			}
		case len(a.Images) != 2:
			t.Errorf("%s: %d images returned, want 2", fr, len(a.Images))
		case (fr == genai.FinishReasonStop) != (a.Incomplete == ""):
			t.Errorf("%s: incomplete note %q", fr, a.Incomplete)
		}
	}
}

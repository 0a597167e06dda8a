package api

import (
	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// What a finish reason makes of an answer. Every reason the genai SDK
// (v1.77.0) defines has one of these behaviours, and so has any reason it
// does not know yet:
//
//   - STOP: the answer is whole.
//   - MAX_TOKENS, CONTINUATION: the answer stopped at a limit of the
//     model's output (the API would go on with CONTINUATION if asked with
//     its token, which this server does not send: its SDK would bill each
//     request beyond the call's view). The text that came is given, said
//     to be cut, and recorded as the turn, so that a chat-reply
//     ("continue") lets the model go on from where it stopped (endCut).
//   - SAFETY, PROHIBITED_CONTENT, BLOCKLIST, SPII, IMAGE_SAFETY,
//     IMAGE_PROHIBITED_CONTENT, RECITATION, IMAGE_RECITATION, LANGUAGE:
//     the API withheld the answer: the call fails, nothing is recorded
//     (finishError).
//   - MALFORMED_FUNCTION_CALL, UNEXPECTED_TOOL_CALL, TOO_MANY_TOOL_CALLS:
//     the model's tool call was broken: the call fails, nothing is
//     recorded (finishError).
//   - none (the stream closed without one; asked once more, see
//     streamWithRetries), FINISH_REASON_UNSPECIFIED, OTHER, NO_IMAGE,
//     IMAGE_OTHER and any other: the answer may be cut anywhere, for a
//     reason the API does not give: what came is given, said to be cut,
//     and not recorded (endUnsure). A turn that asked for images fails
//     with NO_IMAGE or IMAGE_OTHER all the same (imageFinishError).
type ending int

const (
	endWhole ending = iota
	endCut
	endUnsure
)

func endingOf(fr genai.FinishReason) ending {
	switch fr {
	case genai.FinishReasonStop:
		return endWhole
	case genai.FinishReasonMaxTokens, genai.FinishReasonContinuation:
		return endCut
	}
	return endUnsure
}

// finishError is the error of an answer whose finish reason fails the
// call, nil for the others. answered says whether any text or function
// call came.
func finishError(fr genai.FinishReason, answered bool) *backend.Error {
	switch fr {
	case genai.FinishReasonSafety, genai.FinishReasonProhibitedContent, genai.FinishReasonBlocklist,
		genai.FinishReasonSPII, genai.FinishReasonImageSafety, genai.FinishReasonImageProhibitedContent:
		return newError(backend.KindEmpty, nil, "the Gemini API stopped the answer for safety "+
			"(finish reason %s); rephrase the prompt", fr)
	case genai.FinishReasonRecitation, genai.FinishReasonImageRecitation:
		return newError(backend.KindEmpty, nil, "the Gemini API stopped the answer because it "+
			"recited existing material (finish reason %s); ask for it in other words", fr)
	case genai.FinishReasonLanguage:
		return newError(backend.KindEmpty, nil, "the Gemini API stopped the answer because it was in a "+
			"language the model does not support (finish reason LANGUAGE); ask for the answer in another language")
	case genai.FinishReasonMalformedFunctionCall, genai.FinishReasonUnexpectedToolCall:
		return newError(backend.KindBadOutput, nil, "Gemini answered with a tool call the API could not take "+
			"(finish reason %s); nothing was run or recorded; try again", fr)
	case genai.FinishReasonTooManyToolCalls:
		return newError(backend.KindBadOutput, nil, "Gemini called too many tools in a row and the API "+
			"stopped it (finish reason TOO_MANY_TOOL_CALLS); nothing was recorded; ask for fewer tool calls at once")
	}
	if answered {
		return nil
	}
	switch fr {
	case "":
		return newError(backend.KindEmpty, nil, "the Gemini API answered no text (finish reason none); try again")
	case genai.FinishReasonNoImage, genai.FinishReasonImageOther:
		return imageFinishError(fr, "")
	case genai.FinishReasonMaxTokens:
		return newError(backend.KindEmpty, nil, "the model reached its output limit before any answer text "+
			"(finish reason MAX_TOKENS), its thinking may have used it all; try a lower thinking_mode, or a "+
			"narrower question")
	}
	return newError(backend.KindEmpty, nil, "the Gemini API answered no text (finish reason %s); try again", fr)
}

// incompleteNote says, for Answer.Incomplete, why res, the answer of a
// turn of session id (fresh: a new one), is not whole, and whether it is
// kept as the session's turn; "" for a whole answer.
func incompleteNote(res *streamResult, fresh bool, id string) (note string, keep bool) {
	switch {
	case res.incomplete:
		note = "The Gemini API's stream ended without a finish reason, so this answer may be cut short. "
	case endingOf(res.finish) == endCut:
		note = "Gemini stopped at the model's output limit (finish reason " + string(res.finish) + "): the answer is cut. " +
			"It was recorded in the conversation as it is: chat-reply with sessionId " + id + " and the prompt " +
			"\"continue\" makes Gemini go on from where it stopped (or ask for a shorter answer)."
		return note, true
	case endingOf(res.finish) == endUnsure:
		note = "The Gemini API stopped the answer for a reason it does not give (finish reason " + string(res.finish) +
			"), so this answer may be cut short. "
	default:
		return "", false
	}
	note += "It was not recorded in the conversation: "
	if fresh {
		return note + "no conversation was started; ask again with chat.", false
	}
	return note + "chat-reply with sessionId " + id + " continues from the turn before it.", false
}

package fakeapi

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
)

// Thought signatures, as Gemini 3 models give and want them back.
//
// For a model whose name starts with "gemini-3" (see [SignsThoughts]), the
// Server's streamed answers carry thoughtSignature fields as the API's do:
//
//   - the first functionCall part of an answer has one (parallel calls
//     after it have none);
//   - an answer in text ends with one more event, after the text, whose
//     only part is an empty text part carrying the signature, with the
//     finishReason and the usage: the event a client that merges streamed
//     text is apt to drop.
//
// A signature is base64 in the JSON (bytes in genai.Part.ThoughtSignature);
// its bytes start with [SignaturePrefix].
//
// The Server refuses, with HTTP 400 INVALID_ARGUMENT and the API's own
// message ([MissingSignatureMessage]), a request for such a model whose
// contents hold a model content whose first functionCall part has no
// thoughtSignature; and one whose signature is neither one the Server
// gave nor [SkipSignature] ([CorruptSignatureMessage]). The real API checks the function calls of
// the current turn only (from the last user content with text); the
// Server checks every model content of the request, so that a client
// that keeps signatures for the current turn but drops them from its
// stored history is caught too.

// SignaturePrefix starts the bytes of every thought signature the Server
// gives.
const SignaturePrefix = "fake-thought-signature:"

// CorruptSignatureMessage is the message of the error the Server answers a
// request with a thought signature it did not give.
const CorruptSignatureMessage = "Corrupted thought signature."

// MissingSignatureMessage returns the message of the error the Server
// answers a Gemini 3 request whose history has a function call without
// its thought signature: the API's words, with the function's name and the
// content's position (1-based) in contents.
func MissingSignatureMessage(name string, position int) string {
	return fmt.Sprintf("Function call is missing a thought_signature in functionCall parts. This is required for "+
		"tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional "+
		"data, function call `default_api:%s` , position %d. Please refer to "+
		"https://ai.google.dev/gemini-api/docs/thought-signatures for more details.", name, position)
}

// SignsThoughts says whether the Server signs the answers of model and
// requires the signatures back: the Gemini 3 models.
func SignsThoughts(model string) bool { return strings.HasPrefix(model, "gemini-3") }

var signatures atomic.Int64

// newSignature returns a fresh signature, base64 as it goes in JSON.
func newSignature(model string) string {
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%s%s:%d", SignaturePrefix, model, signatures.Add(1)))
}

// SkipSignature is the value the API documents for a function call that
// did not come from the model (a client's own, or one from another model)
// to stand in for its signature; the Gemini CLI sends it so. The Server,
// like the API, accepts it.
const SkipSignature = "skip_thought_signature_validator"

// validSignature says whether sig (base64, as in the JSON) is one the
// Server gave, or SkipSignature.
func validSignature(sig string) bool {
	if sig == SkipSignature || sig == "context_engineering_is_the_way_to_go" {
		return true
	}
	b, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		b, err = base64.URLEncoding.DecodeString(sig)
	}
	return err == nil && strings.HasPrefix(string(b), SignaturePrefix)
}

// refuseUnsigned answers 400, and says so, when req (for rec.Model) holds
// a function call without its thought signature, or a signature the
// Server did not give.
func (s *Server) refuseUnsigned(w http.ResponseWriter, rec Request, req apiRequest) bool {
	if !SignsThoughts(rec.Model) {
		return false
	}
	for i, c := range req.Contents {
		if c.Role != "model" {
			continue
		}
		first := true
		for _, p := range c.Parts {
			if p.ThoughtSignature != "" && !validSignature(p.ThoughtSignature) {
				s.fail(w, rec, http.StatusBadRequest, CorruptSignatureMessage)
				return true
			}
			if p.FunctionCall == nil {
				continue
			}
			if first && p.ThoughtSignature == "" {
				s.fail(w, rec, http.StatusBadRequest, MissingSignatureMessage(p.FunctionCall.Name, i+1))
				return true
			}
			first = false
		}
	}
	return false
}

// signingWriter marks a stream whose events get signed for model.
type signingWriter struct {
	http.ResponseWriter
	model string
}

func (sw *signingWriter) Flush() {
	if fl, ok := sw.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}

// sign adds the signatures of a Gemini 3 answer to its events: on the
// first functionCall part of the answer, and, for an answer whose last
// event has text, in one more event after it that carries the last
// event's finishReason and usage.
func (sw *signingWriter) sign(frames [][]byte) [][]byte {
	out := make([][]byte, 0, len(frames)+1)
	called := false
	for i, f := range frames {
		var ev map[string]any
		if json.Unmarshal(f, &ev) != nil {
			out = append(out, f)
			continue
		}
		cands, _ := ev["candidates"].([]any)
		if len(cands) == 0 {
			out = append(out, f)
			continue
		}
		cand, _ := cands[0].(map[string]any)
		content, _ := cand["content"].(map[string]any)
		parts, _ := content["parts"].([]any)
		hasText := false
		for _, p := range parts {
			pm, _ := p.(map[string]any)
			if pm == nil {
				continue
			}
			if _, ok := pm["functionCall"]; ok && !called {
				pm["thoughtSignature"] = newSignature(sw.model)
				called = true
			}
			if _, ok := pm["text"]; ok {
				hasText = true
			}
		}
		finish, done := cand["finishReason"]
		if i == len(frames)-1 && hasText && !called && done {
			usage, hasUsage := ev["usageMetadata"]
			delete(cand, "finishReason")
			delete(ev, "usageMetadata")
			b, _ := json.Marshal(ev)
			out = append(out, b)
			last := map[string]any{"candidates": []any{map[string]any{
				"content": map[string]any{"role": "model", "parts": []any{map[string]any{
					"text": "", "thoughtSignature": newSignature(sw.model)}}},
				"finishReason": finish,
				"index":        0,
			}}}
			if hasUsage {
				last["usageMetadata"] = usage
			}
			b, _ = json.Marshal(last)
			out = append(out, b)
			continue
		}
		b, _ := json.Marshal(ev)
		out = append(out, b)
	}
	return out
}

package fakeapi

// Code execution and thought summaries, as the Server fakes them:
//
//   - a request whose tools hold codeExecution and whose prompt carries
//     [[code:OUTCOME]] (OK, FAILED or DEADLINE_EXCEEDED) is answered with
//     the parts the API sends for code the model ran in its sandbox, in
//     one event each: a text part ([CodeIntro]), an executableCode part
//     (language PYTHON, [CodeFor] the outcome), a codeExecutionResult part
//     (outcome OUTCOME_<OUTCOME>, output [CodeOutput] of it), with
//     [[code-image]] an inlineData part holding [CodeImage] (image/png),
//     then the usual answer's text with its finishReason and usage. A
//     request without the codeExecution tool gets the usual answer: the
//     model cannot run code;
//   - a request whose generationConfig.thinkingConfig has includeThoughts
//     true, and that does not turn thinking off (thinkingBudget 0), is
//     answered with a first event holding a thought part ("thought":
//     true, text [ThoughtSummary]) before the answer;
//   - a request with thinkingBudget 0 for a model that cannot turn
//     thinking off (a Gemini 2.5 Pro model) is refused with 400
//     INVALID_ARGUMENT and [NoThinkingOffMessage], the API's own words.

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
)

var codeRE = regexp.MustCompile(`\[\[code:(OK|FAILED|DEADLINE_EXCEEDED)\]\]`)

// CodeIntro is the text before the code of an answer with code execution.
const CodeIntro = "fake-api: let me compute it."

// ThoughtSummary is the text of the thought part of an answer to a
// request that asks for thoughts.
const ThoughtSummary = "fake-api thought: weighing the question before answering."

// NoThinkingOffMessage is the message of the 400 the Server answers a
// request with thinkingBudget 0 for a model that only works in thinking
// mode.
const NoThinkingOffMessage = "Budget 0 is invalid. This model only works in thinking mode."

// CodeImage is the PNG image (a 1×1 pixel) of a [[code-image]] answer.
var CodeImage, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

// CodeFor is the Python code of an answer whose code has outcome
// (OK, FAILED or DEADLINE_EXCEEDED).
func CodeFor(outcome string) string {
	switch outcome {
	case "FAILED":
		return "print(1/0)"
	case "DEADLINE_EXCEEDED":
		return "while True:\n    pass"
	}
	return "print(6 * 7)"
}

// CodeOutput is the output of the code of outcome.
func CodeOutput(outcome string) string {
	switch outcome {
	case "FAILED":
		return "Traceback (most recent call last):\nZeroDivisionError: division by zero\n"
	case "DEADLINE_EXCEEDED":
		return ""
	}
	return "42\n"
}

// genConfig is what the Server reads of a request's generationConfig and
// tools for code execution and thinking.
type genConfig struct {
	Tools []struct {
		CodeExecution *json.RawMessage `json:"codeExecution"`
	} `json:"tools"`
	GenerationConfig struct {
		ThinkingConfig *struct {
			IncludeThoughts bool `json:"includeThoughts"`
			ThinkingBudget  *int `json:"thinkingBudget"`
		} `json:"thinkingConfig"`
	} `json:"generationConfig"`
}

func genConfigOf(body []byte) genConfig {
	var g genConfig
	_ = json.Unmarshal(body, &g)
	return g
}

// CodeExecution says whether the request offered the codeExecution tool.
func (r Request) CodeExecution() bool {
	for _, t := range genConfigOf(r.Body).Tools {
		if t.CodeExecution != nil {
			return true
		}
	}
	return false
}

// IncludeThoughts says whether the request asked for thought summaries.
func (r Request) IncludeThoughts() bool {
	tc := genConfigOf(r.Body).GenerationConfig.ThinkingConfig
	return tc != nil && tc.IncludeThoughts
}

// ThinkingOff says whether the request turned thinking off (a
// thinkingBudget of 0).
func (r Request) ThinkingOff() bool {
	tc := genConfigOf(r.Body).GenerationConfig.ThinkingConfig
	return tc != nil && tc.ThinkingBudget != nil && *tc.ThinkingBudget == 0
}

// refuseThinkingOff answers, and says so, a request that turns thinking
// off on a model that cannot.
func (s *Server) refuseThinkingOff(w http.ResponseWriter, rec Request) bool {
	if strings.HasPrefix(rec.Model, "gemini-2.5-pro") && rec.ThinkingOff() {
		s.fail(w, rec, http.StatusBadRequest, NoThinkingOffMessage)
		return true
	}
	return false
}

// withThoughts puts before an answer's events the thought part the
// request asked for, if any.
func withThoughts(frames [][]byte, rec Request) [][]byte {
	if !rec.IncludeThoughts() || rec.ThinkingOff() {
		return frames
	}
	return append([][]byte{eventJSON(map[string]any{"text": ThoughtSummary, "thought": true})}, frames...)
}

// codeFrames are the events of an answer with code the model ran, before
// last, the answer's last event; nil when the request does not ask for
// one.
func codeFrames(rec Request, last []byte) [][]byte {
	m := codeRE.FindStringSubmatch(rec.LastUserText)
	if m == nil || !rec.CodeExecution() {
		return nil
	}
	frames := [][]byte{
		eventJSON(map[string]any{"text": CodeIntro}),
		eventJSON(map[string]any{"executableCode": map[string]any{"language": "PYTHON", "code": CodeFor(m[1])}}),
		eventJSON(map[string]any{"codeExecutionResult": map[string]any{"outcome": "OUTCOME_" + m[1], "output": CodeOutput(m[1])}}),
	}
	if strings.Contains(rec.LastUserText, "[[code-image]]") {
		frames = append(frames, eventJSON(map[string]any{"inlineData": map[string]any{
			"mimeType": "image/png", "data": base64.StdEncoding.EncodeToString(CodeImage)}}))
	}
	return append(frames, last)
}

// eventJSON is a stream event with one candidate holding part, and no
// finishReason.
func eventJSON(part map[string]any) []byte {
	b, _ := json.Marshal(map[string]any{"candidates": []any{map[string]any{
		"content": map[string]any{"role": "model", "parts": []any{part}},
		"index":   0,
	}}})
	return b
}

package fakeapi

import (
	"encoding/json"
	"strings"
	"time"
)

// The Interaction JSON of a fake interaction, as the genai SDK's
// interactions.Interaction reads it (see interactions.go).

// status is the interaction's status now (called under the store's lock).
func (fi *fakeInteraction) status() string {
	switch {
	case fi.cancelled:
		return "cancelled"
	case !fi.background:
		return fi.final
	case fi.polls == 0:
		return "queued"
	case fi.hold || fi.polls <= fi.steps:
		return "in_progress"
	}
	return fi.final
}

func (fi *fakeInteraction) done() bool {
	st := fi.status()
	return st != "queued" && st != "in_progress"
}

// thoughts is the number of thought steps made so far.
func (fi *fakeInteraction) thoughts() int {
	if !fi.background {
		if fi.agent != "" {
			return fi.steps
		}
		return 0
	}
	return min(fi.polls, fi.steps)
}

// view is the Interaction as the API answers it.
func (fi *fakeInteraction) view() map[string]any {
	st := fi.status()
	v := map[string]any{
		"id":      fi.id,
		"status":  st,
		"created": fi.created.Format(time.RFC3339),
		"updated": time.Now().UTC().Format(time.RFC3339),
	}
	if fi.agent != "" {
		v["agent"] = fi.agent
	} else {
		v["model"] = fi.model
	}
	if len(fi.agentConfig) > 0 {
		v["agent_config"] = fi.agentConfig
	}
	if fi.prev != "" {
		v["previous_interaction_id"] = fi.prev
	}
	steps := []any{}
	for i := 1; i <= fi.thoughts(); i++ {
		steps = append(steps, map[string]any{
			"type":    "thought",
			"summary": []any{map[string]any{"type": "text", "text": ThoughtText(i)}},
		})
	}
	out := 0
	switch st {
	case "completed":
		text, block := fi.answer()
		out = CountTokens(text)
		steps = append(steps, map[string]any{"type": "model_output", "content": []any{block}})
	case "incomplete", "budget_exceeded":
		text := ReportText(fi.input)
		text = text[:strings.Index(text, ".")+1]
		out = CountTokens(text)
		steps = append(steps, map[string]any{"type": "model_output",
			"content": []any{map[string]any{"type": "text", "text": text}}})
	case "requires_action":
		steps = append(steps, map[string]any{"type": "function_call", "id": "call-1",
			"name": "lookup", "arguments": map[string]any{"query": fi.input}})
	case "failed":
		v["errors"] = []any{map[string]any{"code": "INTERNAL", "message": InteractionFailedMessage}}
	}
	v["steps"] = steps
	in, thought := CountTokens(fi.input), ThoughtTokens*fi.thoughts()
	v["usage"] = map[string]any{
		"total_input_tokens": in, "total_output_tokens": out,
		"total_thought_tokens": thought, "total_tokens": in + out + thought,
	}
	return v
}

// answer is the text of a completed interaction and its content block.
func (fi *fakeInteraction) answer() (string, map[string]any) {
	switch {
	case fi.agent == "":
		text := InteractionAnswer(fi.input, fi.turn)
		return text, map[string]any{"type": "text", "text": text}
	case fi.planning:
		text := PlanText(fi.input)
		return text, map[string]any{"type": "text", "text": text}
	}
	text := ReportText(fi.input)
	if fi.reportBytes > 0 {
		text = LongAnswer(text, fi.reportBytes)
	}
	text += ContextEcho(fi.context, fi.documents)
	var anns []any
	for _, c := range ReportCitations(fi.input) {
		anns = append(anns, map[string]any{"type": "url_citation", "url": c.URL,
			"title": c.Title, "start_index": c.Start, "end_index": c.End})
	}
	return text, map[string]any{"type": "text", "text": text, "annotations": anns}
}

// inputSteps reads an interaction's input and counts the user turns
// resent before it: an input of steps (user_input and model_output, a
// conversation resent) is read as its last user_input step's content,
// after the user_input steps before it; any other input as parseInput
// reads it, after none. The string is why the input is refused, "" if
// it is not.
func inputSteps(raw json.RawMessage) (interactionInput, int, string) {
	var steps []struct {
		Type    string            `json:"type"`
		Content []json.RawMessage `json:"content"`
	}
	if json.Unmarshal(raw, &steps) != nil {
		in, bad := parseInput(raw)
		return in, 0, bad
	}
	users, last := 0, -1
	for i, st := range steps {
		if st.Type == "user_input" {
			users, last = users+1, i
		}
	}
	if last < 0 {
		in, bad := parseInput(raw)
		return in, 0, bad
	}
	content, _ := json.Marshal(steps[last].Content)
	in, bad := parseInput(content)
	return in, users - 1, bad
}

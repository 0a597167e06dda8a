package interact

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"google.golang.org/genai/interactions/models/interactions"
)

// Bounds on what a Result holds of an interaction.
const (
	// MaxSteps bounds the steps read of one interaction; those past it are
	// skipped but for the last, which holds the answer, and Truncated is
	// set.
	MaxSteps = 2000
	// MaxTextBytes bounds the answer's text (the report); past it, the text
	// is cut and Truncated set.
	MaxTextBytes = 1 << 20
	// MaxThoughts bounds the thought summaries kept: the latest ones.
	MaxThoughts = 64
	// maxThoughtBytes bounds one thought summary.
	maxThoughtBytes = 4 << 10
	// MaxCitations bounds the citations kept.
	MaxCitations = 256
	// maxErrors bounds the errors kept, of the steps (at most half of
	// them) and of the interaction, each at most 500 bytes.
	maxErrors = 16
)

// Status is an interaction's status, as the API names it.
type Status string

// The statuses of the SDK's interactions.InteractionStatus.
const (
	Queued               Status = "queued"
	InProgress           Status = "in_progress"
	RequiresAction       Status = "requires_action"
	Completed            Status = "completed"
	Failed               Status = "failed"
	Cancelled            Status = "cancelled"
	Incomplete           Status = "incomplete"
	BudgetExceeded       Status = "budget_exceeded"
	RequiresContinuation Status = "requires_continuation"
)

// Known says whether the SDK knows the status.
func (s Status) Known() bool {
	return interactions.InteractionStatus(s).ToPointer().IsExact()
}

// Done says whether the interaction has stopped: any known status but
// queued and in_progress. A status the SDK does not know is taken for
// one still running ("keep polling"): the API adds statuses (it added
// requires_continuation), and a poll that never ends is bounded by the
// job that polls it, whereas a status taken for an end would lose a
// result still to come.
func (s Status) Done() bool {
	return s.Known() && s != Queued && s != InProgress
}

// Citation is a source the answer cites.
type Citation struct {
	Title string
	URL   string
	// Start and End are the byte offsets in Result.Text of the span
	// attributed to the source (End exclusive); both -1 when the API
	// gives none, or a span that does not fit the text.
	Start, End int
}

// Usage is the interaction's token usage, as far as the API reports it.
type Usage struct {
	Input, Output, Thought, ToolUse, Total int
}

// Result is an interaction as a Client reads it.
type Result struct {
	ID     string
	Status Status
	// Agent or Model is what runs it; PreviousID the interaction it
	// continues.
	Agent, Model, PreviousID string
	// Text is the answer: the text of the model_output steps, in order
	// (a report, a plan, or what was produced before an interaction
	// stopped).
	Text string
	// Plan says Text is a research plan waiting for approval: the
	// interaction finished with collaborative planning asked for.
	Plan      bool
	Citations []Citation
	// Thoughts are the thought summaries so far, oldest first (the latest
	// MaxThoughts).
	Thoughts []string
	// Calls are the names of the functions a requires_action interaction
	// asks to be run.
	Calls []string
	// Errors are the interaction's errors entries (a failed one's cause).
	Errors []string
	Usage  Usage
	// Truncated says steps, text or citations were left out by the
	// bounds above.
	Truncated bool
}

// Err is the error of an interaction that stopped without its answer: a
// clear message with its status and the API's errors, or nil when it
// completed or is still running. The Result keeps what was produced.
func (r *Result) Err() error {
	if !r.Status.Done() || r.Status == Completed {
		return nil
	}
	why := map[Status]string{
		Failed:               "failed",
		Cancelled:            "was cancelled",
		Incomplete:           "stopped incomplete",
		BudgetExceeded:       "stopped: its budget was exceeded",
		RequiresAction:       "is waiting for function results, which this server does not send",
		RequiresContinuation: "stopped and asks to be continued, which this server does not do",
	}[r.Status]
	msg := fmt.Sprintf("interaction %s %s", r.ID, why)
	if len(r.Errors) > 0 {
		msg += ": " + strings.Join(r.Errors, "; ")
	}
	if r.Text != "" {
		msg += fmt.Sprintf(" (%d bytes of its answer were produced)", len(r.Text))
	}
	return fmt.Errorf("%s", msg)
}

// The fields of the SDK's interactions.Interaction that a Result reads,
// under the same JSON names. The SDK's own types decode each union (a
// step, a content block, an annotation) by parsing its bytes again for
// every level and candidate: a finished Deep Research run of 80 KB takes
// them 9,100 allocations, 1 MB and 16–29 ms (BenchmarkDecodePoll), an
// 8 MiB answer seconds of CPU, at every poll; these read it with 1,100
// allocations, 270 KB and a sixth to an eighth of the time.
// sdk_test.go checks that they read what the SDK's types write.
type wireInteraction struct {
	ID          *string `json:"id"`
	Status      string  `json:"status"`
	Agent       *string `json:"agent"`
	Model       *string `json:"model"`
	PreviousID  *string `json:"previous_interaction_id"`
	AgentConfig *struct {
		Type                  string `json:"type"`
		CollaborativePlanning *bool  `json:"collaborative_planning"`
	} `json:"agent_config"`
	// Steps are decoded one by one, and only MaxSteps of them.
	Steps  []json.RawMessage `json:"steps"`
	Errors []struct {
		Code    *string `json:"code"`
		Message *string `json:"message"`
	} `json:"errors"`
	Usage *struct {
		Input   *int `json:"total_input_tokens"`
		Output  *int `json:"total_output_tokens"`
		Thought *int `json:"total_thought_tokens"`
		ToolUse *int `json:"total_tool_use_tokens"`
		Total   *int `json:"total_tokens"`
	} `json:"usage"`
}

type wireStep struct {
	Type    string        `json:"type"`
	Summary []wireContent `json:"summary"` // thought
	Content []wireContent `json:"content"` // model_output
	Error   *struct {
		Message *string `json:"message"`
	} `json:"error"` // model_output
	Name string `json:"name"` // function_call
}

type wireContent struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []struct {
		Type       string  `json:"type"`
		URL        *string `json:"url"`
		Title      *string `json:"title"`
		StartIndex *int    `json:"start_index"`
		EndIndex   *int    `json:"end_index"`
	} `json:"annotations"`
}

// resultOf reads the JSON of an interaction into a Result, within the
// bounds.
func resultOf(raw []byte) (*Result, error) {
	var in wireInteraction
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, fmt.Errorf("interactions: %w: %s", ErrBadAnswer, clip(err.Error(), 200))
	}
	if in.ID == nil || checkID(*in.ID) != nil {
		return nil, fmt.Errorf("interactions: %w: an answer without a valid interaction id", ErrBadAnswer)
	}
	r := &Result{ID: *in.ID, Status: Status(clip(in.Status, 64))}
	if r.Status == "" {
		return nil, fmt.Errorf("interactions: %w: interaction %s has no status", ErrBadAnswer, r.ID)
	}
	if in.Agent != nil {
		r.Agent = clip(*in.Agent, 128)
	}
	if in.Model != nil {
		r.Model = clip(*in.Model, 128)
	}
	if in.PreviousID != nil {
		r.PreviousID = clip(*in.PreviousID, 256)
	}
	steps := in.Steps
	if len(steps) > MaxSteps {
		steps = append(steps[:MaxSteps-1:MaxSteps-1], steps[len(steps)-1])
		r.Truncated = true
	}
	var text strings.Builder
	for _, rawStep := range steps {
		var st wireStep
		if json.Unmarshal(rawStep, &st) != nil {
			continue // a step of a shape not known: the SDK keeps it as unknown too
		}
		switch st.Type {
		case "thought":
			for _, sc := range st.Summary {
				if sc.Type == "text" && sc.Text != "" {
					r.addThought(sc.Text)
				}
			}
		case "model_output":
			for i := range st.Content {
				if st.Content[i].Type == "text" {
					r.addText(&text, &st.Content[i])
				}
			}
			if st.Error != nil && st.Error.Message != nil && len(r.Errors) < maxErrors/2 {
				// Half the room: the interaction's own errors, its
				// cause, come after.
				r.Errors = append(r.Errors, clip(*st.Error.Message, 500))
			}
		case "function_call":
			if len(r.Calls) < 64 {
				r.Calls = append(r.Calls, clip(st.Name, 128))
			}
		}
	}
	r.Text = text.String()
	for _, e := range in.Errors {
		if len(r.Errors) == maxErrors {
			break
		}
		var parts []string
		if e.Code != nil {
			parts = append(parts, clip(*e.Code, 64))
		}
		if e.Message != nil {
			parts = append(parts, clip(*e.Message, 500))
		}
		r.Errors = append(r.Errors, strings.Join(parts, ": "))
	}
	if ac := in.AgentConfig; r.Status == Completed && ac != nil && ac.Type == "deep-research" {
		r.Plan = ac.CollaborativePlanning != nil && *ac.CollaborativePlanning
	}
	if u := in.Usage; u != nil {
		r.Usage = Usage{Input: val(u.Input), Output: val(u.Output), Thought: val(u.Thought),
			ToolUse: val(u.ToolUse), Total: val(u.Total)}
	}
	return r, nil
}

func (r *Result) addThought(s string) {
	if len(r.Thoughts) == MaxThoughts {
		r.Thoughts = append(r.Thoughts[:0], r.Thoughts[1:]...)
	}
	r.Thoughts = append(r.Thoughts, clip(s, maxThoughtBytes))
}

// addText appends a text block's text and its URL citations, whose spans
// are offsets in that block, shifted to offsets in the whole.
func (r *Result) addText(text *strings.Builder, tc *wireContent) {
	base := text.Len()
	room := MaxTextBytes - base
	if room <= 0 {
		r.Truncated = r.Truncated || tc.Text != ""
		return
	}
	t := tc.Text
	if len(t) > room {
		t = clip(t, room-len("…"))
		r.Truncated = true
	}
	text.WriteString(t)
	for _, u := range tc.Annotations {
		if u.Type != "url_citation" || u.URL == nil || !webURL(*u.URL) {
			continue
		}
		if len(r.Citations) == MaxCitations {
			r.Truncated = true
			return
		}
		c := Citation{URL: clip(*u.URL, 2048), Start: -1, End: -1}
		if u.Title != nil {
			c.Title = strings.Join(strings.Fields(clip(*u.Title, 500)), " ")
		}
		if u.StartIndex != nil && u.EndIndex != nil {
			s, e := *u.StartIndex, *u.EndIndex
			if 0 <= s && s <= e && e <= len(t) {
				c.Start, c.End = base+s, base+e
			}
		}
		r.Citations = append(r.Citations, c)
	}
}

// webURL says whether s is an http(s) URL with a host: a source the
// report cites, which the research result lists and links. Another (a
// script, a local file, a data: URL) is not a source a client should be
// handed to open.
func webURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (strings.EqualFold(u.Scheme, "http") || strings.EqualFold(u.Scheme, "https")) && u.Host != "" && u.Opaque == ""
}

func val(p *int) int {
	if p == nil || *p < 0 {
		return 0
	}
	return *p
}

package interact

import (
	"encoding/json"
	"testing"

	"google.golang.org/genai/interactions/models/interactions"
)

// What the SDK's types write, a Result reads: the lean decoding of
// result.go agrees with the SDK on every field it reads.
func TestReadsWhatTheSDKWrites(t *testing.T) {
	s := func(v string) *string { return &v }
	n := func(v int) *int { return &v }
	yes := true
	in := interactions.Interaction{
		ID:                    s("sdk-1"),
		Status:                interactions.InteractionStatusCompleted,
		Agent:                 interactions.AgentOptionDeepResearchPreview042026.ToPointer(),
		PreviousInteractionID: s("sdk-0"),
		AgentConfig:           ptr(interactions.NewInteractionAgentConfig(interactions.DeepResearchAgentConfig{CollaborativePlanning: &yes})),
		Steps: []interactions.Step{
			interactions.NewStep(interactions.ThoughtStep{Summary: []interactions.ThoughtSummaryContent{
				interactions.NewThoughtSummaryContent(interactions.TextContent{Text: "a thought"})}}),
			interactions.NewStep(interactions.FunctionCallStep{ID: "c1", Name: "lookup", Arguments: map[string]any{}}),
			interactions.NewStep(interactions.ModelOutputStep{Content: []interactions.Content{
				interactions.NewContent(interactions.TextContent{Text: "first. ", Annotations: []interactions.Annotation{
					interactions.NewAnnotation(interactions.URLCitation{URL: s("https://a.example"), Title: s("A"), StartIndex: n(0), EndIndex: n(6)})}}),
				interactions.NewContent(interactions.TextContent{Text: "second.", Annotations: []interactions.Annotation{
					interactions.NewAnnotation(interactions.URLCitation{URL: s("https://b.example"), StartIndex: n(0), EndIndex: n(7)})}}),
			}}),
		},
		Errors: []interactions.Error{{Code: s("INTERNAL"), Message: s("a fault")}},
		Usage:  &interactions.Usage{TotalInputTokens: n(1), TotalOutputTokens: n(2), TotalThoughtTokens: n(3), TotalToolUseTokens: n(4), TotalTokens: n(10)},
	}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	r, err := resultOf(raw)
	if err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	want := Result{ID: "sdk-1", Status: Completed, Agent: "deep-research-preview-04-2026", PreviousID: "sdk-0",
		Text: "first. second.", Plan: true, Thoughts: []string{"a thought"}, Calls: []string{"lookup"},
		Errors: []string{"INTERNAL: a fault"}, Usage: Usage{1, 2, 3, 4, 10},
		Citations: []Citation{{Title: "A", URL: "https://a.example", Start: 0, End: 6}, {URL: "https://b.example", Start: 7, End: 14}}}
	got, _ := json.Marshal(r)
	exp, _ := json.Marshal(want)
	if string(got) != string(exp) {
		t.Fatalf("read\n%s\nwant\n%s\nfrom %s", got, exp, raw)
	}
}

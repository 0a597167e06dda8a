package fakeapi

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	gi "google.golang.org/genai/interactions"
	"google.golang.org/genai/interactions/models/apierrors"
	"google.golang.org/genai/interactions/models/components"
	"google.golang.org/genai/interactions/models/interactions"
	"google.golang.org/genai/interactions/models/operations"
)

// The Interactions API through Google's own SDK client: what it sends is
// what the Server reads, and every shape the Server answers decodes into
// the SDK's types.

func sdkInteractions(s *Server) *gi.GenAI {
	return gi.New(gi.WithServerURL(s.URL()), gi.WithAPIVersion("v1beta"),
		gi.WithSecurity(components.Security{APIKey: gi.String("test-key")}),
		gi.WithClient(&http.Client{}))
}

func createAgent(t *testing.T, c *gi.GenAI, agent, input string, cfg *interactions.DeepResearchAgentConfig, prev string) *interactions.Interaction {
	t.Helper()
	body := interactions.CreateAgentInteraction{
		Agent:      interactions.AgentOption(agent),
		Background: gi.Bool(true),
		Input:      gi.Pointer(interactions.NewInteractionsInput(input)),
	}
	if cfg != nil {
		body.AgentConfig = gi.Pointer(interactions.NewCreateAgentInteractionAgentConfig(*cfg))
	}
	if prev != "" {
		body.PreviousInteractionID = &prev
	}
	res, err := c.Interactions.Create(testCtx(t), operations.CreateInteractionRequest{
		Body: operations.NewCreateInteractionRequestBody(body)})
	if err != nil {
		t.Fatalf("create %q: %v", input, err)
	}
	return res.Interaction
}

func getInteraction(t *testing.T, c *gi.GenAI, id string) *interactions.Interaction {
	t.Helper()
	res, err := c.Interactions.Get(testCtx(t), operations.GetInteractionByIDRequest{ID: id})
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return res.Interaction
}

func TestInteractionsSDKDeepResearchRun(t *testing.T) {
	s := New()
	t.Cleanup(s.Close)
	c := sdkInteractions(s)
	const q = "fake topic [[steps:3]]"
	cfg := &interactions.DeepResearchAgentConfig{ThinkingSummaries: interactions.ThinkingSummariesAuto.ToPointer()}
	in := createAgent(t, c, DefaultAgents()[0], q, cfg, "")
	if in.Status != interactions.InteractionStatusQueued || in.GetID() == nil || *in.GetID() == "" {
		t.Fatalf("created: status %q id %v, want queued with an id", in.Status, in.GetID())
	}
	if in.AgentConfig == nil || in.AgentConfig.DeepResearchAgentConfig == nil {
		t.Fatalf("agent_config not answered as a DeepResearchAgentConfig: %+v", in.AgentConfig)
	}
	id := *in.ID
	for i := 1; i <= 3; i++ {
		got := getInteraction(t, c, id)
		if got.Status != interactions.InteractionStatusInProgress || len(got.Steps) != i {
			t.Fatalf("poll %d: status %q with %d steps, want in_progress with %d", i, got.Status, len(got.Steps), i)
		}
		st := got.Steps[i-1]
		if st.ThoughtStep == nil || len(st.ThoughtStep.Summary) != 1 || st.ThoughtStep.Summary[0].TextContent == nil ||
			st.ThoughtStep.Summary[0].TextContent.Text != ThoughtText(i) {
			t.Fatalf("poll %d: step %+v, want the thought summary %q", i, st, ThoughtText(i))
		}
	}
	done := getInteraction(t, c, id)
	var polls int
	for _, r := range s.Requests() {
		if r.Interaction != id {
			t.Fatalf("request %s recorded for interaction %q, want %q", r.Method, r.Interaction, id)
		}
		if r.Method == MethodInteractionGet {
			polls++
		}
	}
	if polls != 4 {
		t.Fatalf("%d gets recorded, want 4", polls)
	}
	if done.Status != interactions.InteractionStatusCompleted || len(done.Steps) != 4 {
		t.Fatalf("final: status %q with %d steps, want completed with 4", done.Status, len(done.Steps))
	}
	out := done.Steps[3].ModelOutputStep
	if out == nil || len(out.Content) != 1 || out.Content[0].TextContent == nil {
		t.Fatalf("last step %+v, want a model_output with one text block", done.Steps[3])
	}
	tc := out.Content[0].TextContent
	if tc.Text != ReportText(q) || len(tc.Annotations) != 2 {
		t.Fatalf("report %q with %d annotations, want %q with 2", tc.Text, len(tc.Annotations), ReportText(q))
	}
	want := ReportCitations(q)
	for i, a := range tc.Annotations {
		u := a.URLCitation
		if u == nil || *u.URL != want[i].URL || *u.Title != want[i].Title || *u.StartIndex != want[i].Start || *u.EndIndex != want[i].End {
			t.Fatalf("annotation %d = %+v, want %+v", i, a, want[i])
		}
	}
	if tc.Text[want[0].Start:want[0].End] != "The fake source says so." {
		t.Fatalf("citation spans %q", tc.Text[want[0].Start:want[0].End])
	}
	if u := done.Usage; u == nil || *u.TotalThoughtTokens != 3*ThoughtTokens || *u.TotalTokens == 0 {
		t.Fatalf("usage %+v", done.Usage)
	}
}

func TestInteractionsSDKPlanThenApprove(t *testing.T) {
	s := New()
	t.Cleanup(s.Close)
	c := sdkInteractions(s)
	agent := DefaultAgents()[0]
	plan := createAgent(t, c, agent, "plan topic [[steps:0]]", &interactions.DeepResearchAgentConfig{CollaborativePlanning: gi.Bool(true)}, "")
	got := getInteraction(t, c, *plan.ID)
	if got.Status != interactions.InteractionStatusCompleted || got.AgentConfig.DeepResearchAgentConfig.CollaborativePlanning == nil {
		t.Fatalf("plan: %q %+v", got.Status, got.AgentConfig)
	}
	if text := got.Steps[0].ModelOutputStep.Content[0].TextContent.Text; text != PlanText("plan topic [[steps:0]]") {
		t.Fatalf("plan text %q", text)
	}
	run := createAgent(t, c, agent, "Approved. [[steps:0]]", &interactions.DeepResearchAgentConfig{CollaborativePlanning: gi.Bool(false)}, *plan.ID)
	got = getInteraction(t, c, *run.ID)
	if *got.PreviousInteractionID != *plan.ID || got.Steps[0].ModelOutputStep.Content[0].TextContent.Text != ReportText("Approved. [[steps:0]]") {
		t.Fatalf("approved run: %+v", got)
	}
}

func TestInteractionsSDKStatusesCancelDelete(t *testing.T) {
	s := New()
	t.Cleanup(s.Close)
	c := sdkInteractions(s)
	agent := DefaultAgents()[0]
	for _, final := range []string{"failed", "incomplete", "budget_exceeded", "requires_action", "cancelled"} {
		in := createAgent(t, c, agent, "q [[steps:0]] [[final:"+final+"]]", nil, "")
		got := getInteraction(t, c, *in.ID)
		if string(got.Status) != final || !got.Status.IsExact() {
			t.Fatalf("status %q, want %q", got.Status, final)
		}
		switch final {
		case "failed":
			if len(got.Errors) != 1 || *got.Errors[0].Message != InteractionFailedMessage {
				t.Fatalf("failed: errors %+v", got.Errors)
			}
		case "incomplete", "budget_exceeded":
			if got.Steps[0].ModelOutputStep == nil {
				t.Fatalf("%s: steps %+v, want the partial report", final, got.Steps)
			}
		case "requires_action":
			if fc := got.Steps[0].FunctionCallStep; fc == nil || fc.Name != "lookup" {
				t.Fatalf("requires_action: steps %+v", got.Steps)
			}
		}
	}
	odd := createAgent(t, c, agent, "q [[steps:0]] [[final:paused]]", nil, "")
	if got := getInteraction(t, c, *odd.ID); got.Status != "paused" || got.Status.IsExact() {
		t.Fatalf("unknown status answered as %q", got.Status)
	}

	held := createAgent(t, c, agent, "q [[hold]]", nil, "")
	getInteraction(t, c, *held.ID)
	res, err := c.Interactions.Cancel(testCtx(t), operations.CancelInteractionByIDRequest{ID: *held.ID})
	if err != nil || res.Interaction.Status != interactions.InteractionStatusCancelled || len(res.Interaction.Steps) != 1 {
		t.Fatalf("cancel: %+v, %v; want cancelled with its one thought step", res, err)
	}
	if _, err := c.Interactions.Delete(testCtx(t), operations.DeleteInteractionRequest{ID: *held.ID}); err != nil {
		t.Fatal(err)
	}
	_, err = c.Interactions.Get(testCtx(t), operations.GetInteractionByIDRequest{ID: *held.ID})
	var ge *apierrors.GetInteractionByIDClientError
	if !errors.As(err, &ge) || ge.HTTPMeta.Response.StatusCode != http.StatusNotFound ||
		*ge.Error_.Code != "NOT_FOUND" || *ge.Error_.Message != InteractionNotFoundMessage(*held.ID) {
		t.Fatalf("get after delete: %v, want 404 NOT_FOUND", err)
	}
}

func TestInteractionsSDKModelChainAndAgents(t *testing.T) {
	s := New()
	t.Cleanup(s.Close)
	c := sdkInteractions(s)
	create := func(input, prev string, store *bool) (*interactions.Interaction, error) {
		body := interactions.CreateModelInteraction{Model: interactions.Model("gemini-3-flash"),
			Input: gi.Pointer(interactions.NewInteractionsInput(input)), Store: store}
		if prev != "" {
			body.PreviousInteractionID = &prev
		}
		res, err := c.Interactions.Create(testCtx(t), operations.CreateInteractionRequest{Body: operations.NewCreateInteractionRequestBody(body)})
		if err != nil {
			return nil, err
		}
		return res.Interaction, nil
	}
	first, err := create("hello", "", nil)
	if err != nil || first.Status != interactions.InteractionStatusCompleted {
		t.Fatalf("first: %+v %v", first, err)
	}
	second, err := create("again", *first.ID, nil)
	if err != nil || second.Steps[0].ModelOutputStep.Content[0].TextContent.Text != InteractionAnswer("again", 2) {
		t.Fatalf("second: %+v %v", second, err)
	}
	unstored, err := create("forget me", "", gi.Bool(false))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := create("after", *unstored.ID, nil); err == nil {
		t.Fatal("previous_interaction_id of an unstored interaction accepted")
	}

	s.SetAgents("agent-a", "agent-b")
	s.DenyAgent("agent-b")
	list, err := c.Agents.List(context.Background(), operations.ListAgentsRequest{})
	if err != nil || list.AgentListResponse == nil || len(list.AgentListResponse.Agents) != 2 || *list.AgentListResponse.Agents[0].ID != "agent-a" {
		t.Fatalf("agents: %+v %v", list, err)
	}
	for agent, code := range map[string]int{"agent-b": 403, "agent-c": 404} {
		_, err := c.Interactions.Create(testCtx(t), operations.CreateInteractionRequest{Body: operations.NewCreateInteractionRequestBody(
			interactions.CreateAgentInteraction{Agent: interactions.AgentOption(agent), Background: gi.Bool(true),
				Input: gi.Pointer(interactions.NewInteractionsInput("q"))})})
		var ce *apierrors.CreateInteractionClientError
		if !errors.As(err, &ce) || ce.HTTPMeta.Response.StatusCode != code || !strings.Contains(*ce.Error_.Message, agent) {
			t.Fatalf("agent %s: %v, want %d", agent, err, code)
		}
	}
}

// TestInteractionsSDKContext: an agent's input as content blocks, as the
// SDK builds them: the first text block is the query, the later ones and
// the documents its context, which the report echoes; a document of a
// type the SDK does not name, or not in base64, is refused with 400.
func TestInteractionsSDKContext(t *testing.T) {
	s := New()
	t.Cleanup(s.Close)
	c := sdkInteractions(s)
	create := func(blocks ...interactions.Content) (*interactions.Interaction, error) {
		res, err := c.Interactions.Create(testCtx(t), operations.CreateInteractionRequest{
			Body: operations.NewCreateInteractionRequestBody(interactions.CreateAgentInteraction{
				Agent: interactions.AgentOption(DefaultAgents()[0]), Background: gi.Bool(true),
				Input: gi.Pointer(interactions.NewInteractionsInput(blocks))})})
		if err != nil {
			return nil, err
		}
		return res.Interaction, nil
	}
	text := func(s string) interactions.Content { return interactions.NewContent(interactions.TextContent{Text: s}) }
	doc := func(mime, data string) interactions.Content {
		return interactions.NewContent(interactions.DocumentContent{Data: &data, MimeType: gi.Pointer(interactions.DocumentContentMimeType(mime))})
	}
	in, err := create(text("with context [[steps:0]]"), text("## Files\nmain.go"), doc("application/pdf", "JVBERi0="))
	if err != nil {
		t.Fatal(err)
	}
	got := getInteraction(t, c, *in.ID)
	want := ReportText("with context [[steps:0]]") + ContextEcho([]string{"## Files\nmain.go"},
		[]string{fmt.Sprintf("application/pdf, 5 bytes, sha256 %x", sha256.Sum256([]byte("%PDF-")))})
	if len(got.Steps) != 1 || got.Steps[0].ModelOutputStep == nil {
		t.Fatalf("steps %+v", got.Steps)
	}
	if have := got.Steps[0].ModelOutputStep.Content[0].TextContent.Text; have != want {
		t.Errorf("the report:\n%s\nwant:\n%s", have, want)
	}
	for _, bad := range []interactions.Content{doc("image/png", "AAAA"), doc("application/pdf", "not base64!")} {
		if _, err := create(text("q"), bad); err == nil || !strings.Contains(err.Error(), "INVALID_ARGUMENT") {
			t.Errorf("a bad document: %v", err)
		}
	}
}

// A conversation resent as steps, in the SDK's own types, is read as its
// last user_input after the user turns before it; a background model
// interaction is polled to its answer.
func TestInteractionsSDKModelConversationResent(t *testing.T) {
	s := New()
	t.Cleanup(s.Close)
	c := sdkInteractions(s)
	text := func(v string) []interactions.Content {
		return []interactions.Content{interactions.NewContent(interactions.TextContent{Text: v})}
	}
	steps := []interactions.Step{
		interactions.NewStep(interactions.UserInputStep{Content: text("one")}),
		interactions.NewStep(interactions.ModelOutputStep{Content: text("answer one")}),
		interactions.NewStep(interactions.UserInputStep{Content: text("two")}),
		interactions.NewStep(interactions.ModelOutputStep{Content: text("answer two")}),
		interactions.NewStep(interactions.UserInputStep{Content: text("three [[steps:1]]")}),
	}
	res, err := c.Interactions.Create(testCtx(t), operations.CreateInteractionRequest{Body: operations.NewCreateInteractionRequestBody(
		interactions.CreateModelInteraction{Model: interactions.Model(InteractionsOnlyModel), Background: gi.Bool(true),
			Input: gi.Pointer(interactions.NewInteractionsInput(steps))})})
	if err != nil || res.Interaction.Status != interactions.InteractionStatusQueued {
		t.Fatalf("create: %+v %v", res, err)
	}
	var in *interactions.Interaction
	for range 4 {
		if in = getInteraction(t, c, *res.Interaction.ID); in.Status == interactions.InteractionStatusCompleted {
			break
		}
	}
	last := in.Steps[len(in.Steps)-1]
	if in.Status != interactions.InteractionStatusCompleted || last.ModelOutputStep == nil ||
		last.ModelOutputStep.Content[0].TextContent.Text != InteractionAnswer("three [[steps:1]]", 3) {
		t.Fatalf("the answer: %+v", in)
	}
}

// TestInteractionsSDKThinkingLevels: the fake takes exactly the thinking
// levels the SDK names, sent by the SDK's own client, and refuses another.
func TestInteractionsSDKThinkingLevels(t *testing.T) {
	s := New()
	t.Cleanup(s.Close)
	c := sdkInteractions(s)
	sdk := []interactions.ThinkingLevel{interactions.ThinkingLevelMinimal, interactions.ThinkingLevelLow,
		interactions.ThinkingLevelMedium, interactions.ThinkingLevelHigh}
	if len(sdk) != len(ThinkingLevels) {
		t.Fatalf("the fake takes %v, the SDK names %v", ThinkingLevels, sdk)
	}
	create := func(level interactions.ThinkingLevel) error {
		body := interactions.CreateModelInteraction{Model: interactions.Model("gemini-3-flash"),
			Input: gi.Pointer(interactions.NewInteractionsInput("think")), GenerationConfig: &interactions.GenerationConfig{ThinkingLevel: &level}}
		_, err := c.Interactions.Create(testCtx(t), operations.CreateInteractionRequest{Body: operations.NewCreateInteractionRequestBody(body)})
		return err
	}
	for i, level := range sdk {
		if string(level) != ThinkingLevels[i] {
			t.Errorf("level %d: the fake takes %q, the SDK names %q", i, ThinkingLevels[i], level)
		}
		if err := create(level); err != nil {
			t.Errorf("level %s: %v", level, err)
		}
	}
	var ce *apierrors.CreateInteractionClientError
	if err := create("max"); !errors.As(err, &ce) || ce.HTTPMeta.Response.StatusCode != 400 {
		t.Errorf("level max: %v, want 400", err)
	}
}

package interact

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"google.golang.org/genai/interactions/models/agents"
	"google.golang.org/genai/interactions/models/interactions"
)

// AgentRequest starts an agent (Deep Research) as a background
// interaction, which Google stores (store: true) so that it can be polled.
type AgentRequest struct {
	// Agent is the agent's name; DefaultAgent when empty.
	Agent string
	// Input is the query (or, after a plan, the approval or the changes
	// asked for).
	Input string
	// PreviousID continues the interaction of that id: the answer to a
	// research plan.
	PreviousID string
	// CollaborativePlanning asks for a research plan first; the research
	// runs only when a follow-up (PreviousID, with CollaborativePlanning
	// false) approves it. A follow-up with it true asks for a changed plan.
	CollaborativePlanning bool
	// ThinkingSummaries asks for the agent's thought summaries as it goes
	// (the progress of [Result.Thoughts]).
	ThinkingSummaries bool
	// Visualization lets the agent put charts and images in its report.
	Visualization bool
	// Context is text sent after Input, each a text content block of its
	// own: the files read for the agent, the URLs it is asked to read.
	Context []string
	// Documents are files the agent reads itself (PDFs), sent inline as
	// document content blocks after the text.
	Documents []Document
}

// Document is a file sent inline for the agent to read.
type Document struct {
	// MIMEType is one of the document types the API takes
	// (DocumentTypes).
	MIMEType string
	Data     []byte
}

// DocumentTypes are the MIME types of documents the Interactions API
// takes as input (the SDK's DocumentContentMimeType).
var DocumentTypes = []string{string(interactions.DocumentContentMimeTypeApplicationPdf), string(interactions.DocumentContentMimeTypeTextCsv)}

// Bounds of an agent's context (AgentRequest.Context and Documents).
const (
	// MaxContextBytes bounds the text sent, Input and Context together:
	// about the million tokens the Deep Research agent reads at most.
	MaxContextBytes = 4 << 20
	// MaxDocuments and MaxDocumentBytes bound the documents sent inline;
	// encoded in base64 they stay under the 20 MB the Gemini API takes
	// inline in one request.
	MaxDocuments     = 20
	MaxDocumentBytes = 14 << 20
)

// checkContext checks r's context against the bounds above.
func checkContext(r AgentRequest) error {
	n := len(r.Input)
	for _, c := range r.Context {
		n += len(c)
	}
	if n > MaxContextBytes {
		return fmt.Errorf("interactions: the query and its context are %d bytes of text, more than the %d sent at most", n, MaxContextBytes)
	}
	if len(r.Documents) > MaxDocuments {
		return fmt.Errorf("interactions: %d documents, more than the %d sent at most", len(r.Documents), MaxDocuments)
	}
	n = 0
	for _, d := range r.Documents {
		if !slices.Contains(DocumentTypes, d.MIMEType) {
			return fmt.Errorf("interactions: a document of type %q: the API takes %s", clip(d.MIMEType, 80), strings.Join(DocumentTypes, " and "))
		}
		n += len(d.Data)
	}
	if n > MaxDocumentBytes {
		return fmt.Errorf("interactions: the documents are %d bytes, more than the %d sent at most", n, MaxDocumentBytes)
	}
	return nil
}

// agentInput is the input of r: its query as a string, or, with
// context, content blocks: the query's text, each context's, then the
// documents.
func agentInput(r AgentRequest) interactions.InteractionsInput {
	if len(r.Context) == 0 && len(r.Documents) == 0 {
		return interactions.NewInteractionsInput(r.Input)
	}
	blocks := []interactions.Content{interactions.NewContent(interactions.TextContent{Text: r.Input})}
	for _, c := range r.Context {
		blocks = append(blocks, interactions.NewContent(interactions.TextContent{Text: c}))
	}
	for _, d := range r.Documents {
		data := base64.StdEncoding.EncodeToString(d.Data)
		blocks = append(blocks, interactions.NewContent(interactions.DocumentContent{Data: &data,
			MimeType: ptr(interactions.DocumentContentMimeType(d.MIMEType))}))
	}
	return interactions.NewInteractionsInput(blocks)
}

// ModelRequest runs a model as an interaction.
type ModelRequest struct {
	Model             string
	Input             string
	SystemInstruction string
	// PreviousID continues a stored interaction: the API holds the
	// conversation, so only the new input is sent.
	PreviousID string
	// Background runs it apart from the call: the answer is queued and
	// [Client.Get] polls it (models such as Deep Think).
	Background bool
	// NoStore sends store: false: Google keeps nothing, and the
	// interaction cannot be continued, polled or deleted. The API refuses
	// it with Background.
	NoStore bool
	// History is the conversation before Input, oldest first, sent as
	// user_input and model_output steps ahead of it: the conversation
	// resent when no stored interaction continues it (PreviousID empty).
	History []Message
	// ThinkingSummaries asks for the model's thought summaries
	// ([Result.Thoughts]).
	ThinkingSummaries bool
	// ThinkingLevel is how much the model thinks, one of
	// [ThinkingLevels] ("" for the model's default).
	ThinkingLevel string
}

// ThinkingLevels are the levels generation_config.thinking_level takes
// (the SDK's interactions.ThinkingLevel), least first.
var ThinkingLevels = []string{"minimal", "low", "medium", "high"}

// Message is one turn of a conversation resent: the user's (Model
// false) or the model's text.
type Message struct {
	Model bool
	Text  string
}

// maxHistoryBytes bounds the text of a ModelRequest's History.
const maxHistoryBytes = 32 << 20

func checkInput(input, prev string) error {
	if strings.TrimSpace(input) == "" {
		return errors.New("interactions: the input is empty")
	}
	if len(input) > maxInputBytes {
		return fmt.Errorf("interactions: the input is %d bytes, more than the %d sent at most", len(input), maxInputBytes)
	}
	if prev != "" {
		return checkID(prev)
	}
	return nil
}

// StartAgent starts an agent interaction in the background and returns it
// as first answered (usually queued).
func (c *Client) StartAgent(ctx context.Context, r AgentRequest) (*Result, error) {
	agent := r.Agent
	if agent == "" {
		agent = DefaultAgent
	}
	if !nameRE.MatchString(agent) {
		return nil, fmt.Errorf("interactions: %q is not an agent name", clip(agent, 80))
	}
	if err := checkInput(r.Input, r.PreviousID); err != nil {
		return nil, err
	}
	if err := checkContext(r); err != nil {
		return nil, err
	}
	summaries, vis := interactions.ThinkingSummariesNone, interactions.VisualizationOff
	if r.ThinkingSummaries {
		summaries = interactions.ThinkingSummariesAuto
	}
	if r.Visualization {
		vis = interactions.VisualizationAuto
	}
	cfg := interactions.DeepResearchAgentConfig{
		CollaborativePlanning: &r.CollaborativePlanning,
		ThinkingSummaries:     &summaries,
		Visualization:         &vis,
	}
	bg := true
	body := interactions.CreateAgentInteraction{
		Agent:       interactions.AgentOption(agent),
		AgentConfig: ptr(interactions.NewCreateAgentInteractionAgentConfig(cfg)),
		Background:  &bg,
		Input:       ptr(agentInput(r)),
	}
	if r.PreviousID != "" {
		body.PreviousInteractionID = &r.PreviousID
	}
	return c.create(ctx, body, agent, r.PreviousID, true)
}

// StartModel runs a model interaction: finished when it returns, unless
// r.Background.
func (c *Client) StartModel(ctx context.Context, r ModelRequest) (*Result, error) {
	if !nameRE.MatchString(strings.TrimPrefix(r.Model, "models/")) {
		return nil, fmt.Errorf("interactions: %q is not a model name", clip(r.Model, 80))
	}
	if err := checkInput(r.Input, r.PreviousID); err != nil {
		return nil, err
	}
	if r.Background && r.NoStore {
		return nil, errors.New("interactions: a background interaction is stored (store: false cannot be polled)")
	}
	body := interactions.CreateModelInteraction{
		Model: interactions.Model(strings.TrimPrefix(r.Model, "models/")),
		Input: ptr(interactions.NewInteractionsInput(r.Input)),
	}
	if len(r.History) > 0 {
		if r.PreviousID != "" {
			return nil, errors.New("interactions: a conversation is continued by its stored interaction or resent, not both")
		}
		steps, err := historySteps(r.History, r.Input)
		if err != nil {
			return nil, err
		}
		body.Input = ptr(interactions.NewInteractionsInput(steps))
	}
	if r.ThinkingLevel != "" && !slices.Contains(ThinkingLevels, r.ThinkingLevel) {
		return nil, fmt.Errorf("interactions: thinking level %q is not one of %s", clip(r.ThinkingLevel, 40), strings.Join(ThinkingLevels, ", "))
	}
	// The SDK marks generation_config's temperature and top_p
	// deprecated: they are not sent.
	if r.ThinkingSummaries || r.ThinkingLevel != "" {
		body.GenerationConfig = &interactions.GenerationConfig{}
	}
	if r.ThinkingSummaries {
		body.GenerationConfig.ThinkingSummaries = ptr(interactions.ThinkingSummariesAuto)
	}
	if r.ThinkingLevel != "" {
		body.GenerationConfig.ThinkingLevel = ptr(interactions.ThinkingLevel(r.ThinkingLevel))
	}
	if r.Background {
		body.Background = ptr(true)
	}
	if r.NoStore {
		body.Store = ptr(false)
	}
	if r.SystemInstruction != "" {
		body.SystemInstruction = &r.SystemInstruction
	}
	if r.PreviousID != "" {
		body.PreviousInteractionID = &r.PreviousID
	}
	return c.create(ctx, body, "", r.PreviousID, r.Background)
}

// historySteps is a conversation resent, then input, as the steps of an
// interaction's input.
func historySteps(history []Message, input string) ([]interactions.Step, error) {
	steps := make([]interactions.Step, 0, len(history)+1)
	n := 0
	for _, m := range history {
		if n += len(m.Text); n > maxHistoryBytes {
			return nil, fmt.Errorf("interactions: the conversation to resend is more than %d bytes", maxHistoryBytes)
		}
		content := []interactions.Content{interactions.NewContent(interactions.TextContent{Text: m.Text})}
		if m.Model {
			steps = append(steps, interactions.NewStep(interactions.ModelOutputStep{Content: content}))
		} else {
			steps = append(steps, interactions.NewStep(interactions.UserInputStep{Content: content}))
		}
	}
	content := []interactions.Content{interactions.NewContent(interactions.TextContent{Text: input})}
	return append(steps, interactions.NewStep(interactions.UserInputStep{Content: content})), nil
}

// create starts an interaction; bounded says the answer comes at once (a
// background one), so that the call is bounded as every other.
func (c *Client) create(ctx context.Context, body any, agent, prev string, bounded bool) (*Result, error) {
	var in json.RawMessage
	call := c.callUnbounded
	if bounded {
		call = c.call
	}
	err := call(ctx, "create", http.MethodPost, "/interactions", body, &in, agent)
	var ae *APIError
	if errors.As(err, &ae) && ae.HTTPStatus == http.StatusNotFound && prev != "" && strings.Contains(ae.Message, prev) {
		// The interaction continued is gone, not the agent.
		ae.kind = ErrNotFound
		ae.text = fmt.Sprintf("interaction %s, to be continued, not found at the Gemini API (deleted, past its retention, or created with store false): %s",
			prev, ae.Message)
	}
	if err != nil {
		return nil, err
	}
	return resultOf(in)
}

// Get returns the interaction of id as it is now. A Client made after a
// restart, given the id kept in a job's record, polls the same
// interaction: nothing else is needed.
func (c *Client) Get(ctx context.Context, id string) (*Result, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	var in json.RawMessage
	if err := c.call(ctx, "get", http.MethodGet, "/interactions/"+id, nil, &in, id); err != nil {
		return nil, err
	}
	return resultFor(in, "get", id)
}

// resultFor reads the answer about interaction id, which must be about
// it: every caller's interactions are under the server's one key, and an
// answer about another (a proxy's cache, a misrouted answer) would hand
// its report to a caller whose job it is not.
func resultFor(raw []byte, op, id string) (*Result, error) {
	r, err := resultOf(raw)
	if err != nil {
		return nil, err
	}
	if r.ID != id {
		return nil, fmt.Errorf("interactions %s: %w: asked about interaction %s, answered about %s", op, ErrBadAnswer, id, r.ID)
	}
	return r, nil
}

// Cancel cancels a background interaction that has not finished, and
// returns it as it is then (one already finished is returned as it is).
func (c *Client) Cancel(ctx context.Context, id string) (*Result, error) {
	if err := checkID(id); err != nil {
		return nil, err
	}
	var in json.RawMessage
	if err := c.call(ctx, "cancel", http.MethodPost, "/interactions/"+id+"/cancel", nil, &in, id); err != nil {
		return nil, err
	}
	return resultFor(in, "cancel", id)
}

// Delete deletes the interaction of id from Google's store.
func (c *Client) Delete(ctx context.Context, id string) error {
	if err := checkID(id); err != nil {
		return err
	}
	return c.call(ctx, "delete", http.MethodDelete, "/interactions/"+id, nil, nil, id)
}

// Agent is an agent the API lists.
type Agent struct {
	Name        string
	Description string
}

// Agents lists the agents the API offers the key, following its pages (at
// most maxAgentPages of them, maxAgents agents). The SDK's agents service
// also creates and deletes agents: whether the list holds Google's own
// agents (Deep Research) beside a project's is not documented, so a name
// missing from it is no proof the key cannot use it; the create call's
// error is ([ErrAgentUnavailable]).
func (c *Client) Agents(ctx context.Context) ([]Agent, error) {
	var out []Agent
	token := ""
	for range maxAgentPages {
		path := "/agents"
		if token != "" {
			path += "?page_token=" + url.QueryEscape(token)
		}
		var page agents.AgentListResponse
		if err := c.call(ctx, "agents", http.MethodGet, path, nil, &page, ""); err != nil {
			return nil, err
		}
		for _, a := range page.Agents {
			if a.ID == nil || !nameRE.MatchString(*a.ID) {
				continue
			}
			d := ""
			if a.Description != nil {
				d = clip(*a.Description, 500)
			}
			out = append(out, Agent{Name: *a.ID, Description: d})
			if len(out) == maxAgents {
				return out, nil
			}
		}
		if page.NextPageToken == nil || *page.NextPageToken == "" || len(*page.NextPageToken) > 1024 {
			return out, nil
		}
		token = *page.NextPageToken
	}
	return out, nil
}

func ptr[T any](v T) *T { return &v }

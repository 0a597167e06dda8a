package interact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
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
}

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
		Input:       ptr(interactions.NewInteractionsInput(r.Input)),
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

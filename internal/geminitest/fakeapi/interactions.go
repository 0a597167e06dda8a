package fakeapi

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The Interactions API, in the wire format of the genai SDK's
// google.golang.org/genai/interactions (v1.77.0; interactions_test.go
// decodes every shape below with the SDK's own types):
//
//   - POST /v1beta/interactions creates one: a model interaction ("model")
//     or an agent interaction ("agent", with "agent_config"), with "input"
//     (a string, or content blocks: the first text block is the query,
//     later text blocks and document blocks its context, which an agent's
//     report echoes, see [ContextEcho]; or steps: a conversation resent as
//     user_input and model_output steps, whose last user_input is the
//     input), "background",
//     "store" (true unless false) and "previous_interaction_id". It is
//     answered with the Interaction: "id", "status", "created", "updated",
//     "agent" or "model", "agent_config" as sent, "previous_interaction_id",
//     "steps" and "usage". A background interaction is answered "queued";
//     one that is not is answered finished at once;
//   - GET /v1beta/interactions/<id> answers it. Each GET of a background
//     interaction moves it one step on: queued, then in_progress with one
//     more thought step (a thought summary, the agent's progress) per GET,
//     [[steps:N]] of them (2 by default), then its final status;
//   - POST /v1beta/interactions/<id>/cancel cancels a background
//     interaction that has not finished (status cancelled, its steps so
//     far kept) and answers it; a finished one is answered as it is;
//   - DELETE /v1beta/interactions/<id> forgets it (answered {});
//   - GET /v1beta/agents lists the agents ([Server.SetAgents], by default
//     [DefaultAgents]) as {"agents":[{"id","description"}]}, in pages of
//     page_size (50 by default) with next_page_token.
//
// An interaction the Server does not hold (never made, deleted, made
// with store false, or made with another API key: the Server's choice, as
// the reference does not say how another project's interaction is
// answered) is 404 NOT_FOUND ([InteractionNotFoundMessage]), also when
// named as previous_interaction_id. An agent the Server does not list
// is 404 ([UnknownAgentMessage]); one refused with [Server.DenyAgent] is
// 403 PERMISSION_DENIED ([AgentDeniedMessage]). The API reference does not
// give the real API's messages for these: the Server's are its own. Their
// body is {"error":{"code":"NOT_FOUND","message":…}}: the SDK's
// interactions.Error has a string code (the google.rpc.Code name), where
// the generateContent API's errors have the HTTP status as a number and
// the name in "status"; the SDK fails to decode the latter on these paths.
// A client should take both.
//
// A finished interaction's last step is a model_output step. For an agent
// it holds the cited report ([ReportText]) with two url_citation
// annotations ([ReportCitations]) whose start_index and end_index span
// the cited sentence; with agent_config.collaborative_planning true it is
// the research plan instead ([PlanText]), and the follow-up that approves
// it is an interaction with previous_interaction_id and
// collaborative_planning false (the SDK's DeepResearchAgentConfig says the
// agent "will then proceed only if the user confirms the plan in the next
// turn"; it does not say how the plan is marked, so the Server answers it
// as a completed interaction whose text is the plan). For a model it is
// [InteractionAnswer].
//
// The input's text may carry directives:
//
//   - [[status:N]] answers the create with HTTP N ([ErrorMessage]);
//   - [[steps:N]] makes N in_progress steps before the end;
//   - [[hold]] stays in_progress until cancelled;
//   - [[final:STATUS]] ends in STATUS instead of completed: failed (with
//     an errors entry, [InteractionFailedMessage]), incomplete and
//     budget_exceeded (with the report's first sentence only),
//     requires_action (with a function_call step), cancelled, or any other
//     word (a status the SDK does not know, sent as it is);
//   - [[report-bytes:N]] lengthens the report to N bytes ([LongAnswer]);
//   - [[malformed]] answers every GET with JSON cut short.
//
// Where the API reference and the SDK are silent the Server chooses: it
// sends no user_input step (the SDK's get has include_input, which the
// Server ignores); it refuses background with store false (400,
// [BackgroundNoStoreMessage]), as a background interaction must be kept to
// be polled; and usage carries total_input_tokens, total_output_tokens,
// total_thought_tokens and total_tokens only.

// Methods of the Interactions API, as recorded in [Request.Method].
const (
	MethodInteractionCreate = "interactions.create"
	MethodInteractionGet    = "interactions.get"
	MethodInteractionCancel = "interactions.cancel"
	MethodInteractionDelete = "interactions.delete"
	MethodAgentsList        = "agents.list"
)

// DefaultAgents are the agents the Server lists unless SetAgents says
// otherwise: names seen in the API's documentation in 2026.
func DefaultAgents() []string {
	return []string{"deep-research-preview-04-2026", "deep-research-max-preview-04-2026"}
}

// InteractionNotFoundMessage is the Server's message for an interaction it
// does not hold.
func InteractionNotFoundMessage(id string) string {
	return fmt.Sprintf("Interaction %s not found", id)
}

// UnknownAgentMessage is the Server's message for an agent it does not
// list.
func UnknownAgentMessage(agent string) string { return fmt.Sprintf("Agent %s not found", agent) }

// AgentDeniedMessage is the Server's message for an agent refused to the
// key ([Server.DenyAgent]).
func AgentDeniedMessage(agent string) string {
	return fmt.Sprintf("The caller does not have permission to use agent %s", agent)
}

// InteractionFailedMessage is the message of a [[final:failed]]
// interaction's errors entry; BackgroundNoStoreMessage the 400 for
// background with store false.
const (
	InteractionFailedMessage = "fake research failed"
	BackgroundNoStoreMessage = "background interactions require store to be true"
)

// PlanText is the research plan a collaborative-planning agent answers
// for input.
func PlanText(input string) string {
	return "Research plan for: " + input + "\n1. Search recent sources.\n2. Compare findings.\n3. Write the report."
}

// ReportText is the report an agent answers for input; ReportCitations
// the URL citations it carries, spanning its second sentence.
func ReportText(input string) string {
	return "Report on: " + input + ". The fake source says so. End of report."
}

// Citation is one url_citation annotation of a report.
type Citation struct {
	Title, URL string
	Start, End int
}

// ReportCitations are the citations of [ReportText] of input.
func ReportCitations(input string) []Citation {
	text := ReportText(input)
	s := strings.Index(text, "The fake source")
	e := s + len("The fake source says so.")
	return []Citation{
		{Title: "Fake source one", URL: "https://example.com/one", Start: s, End: e},
		{Title: "Fake source two", URL: "https://example.com/two", Start: s, End: e},
	}
}

// ThoughtText is the summary of the n-th (from 1) thought step.
func ThoughtText(n int) string { return fmt.Sprintf("Thinking, step %d", n) }

// InteractionAnswer is a model interaction's answer to input, turn being
// its place in its conversation (1 for the first): the turns of its chain
// of previous_interaction_id, and the user turns of a conversation
// resent in its input.
func InteractionAnswer(input string, turn int) string {
	return fmt.Sprintf("Interaction answer (turn %d): %s", turn, input)
}

var (
	interactionRE = regexp.MustCompile(`^/v1(?:beta|alpha|)/interactions(?:/([A-Za-z0-9_-]+)(/cancel)?)?$`)
	agentsRE      = regexp.MustCompile(`^/v1(?:beta|alpha|)/agents$`)
	stepsRE       = regexp.MustCompile(`\[\[steps:(\d+)\]\]`)
	finalRE       = regexp.MustCompile(`\[\[final:([a-z_]+)\]\]`)
	reportBytesRE = regexp.MustCompile(`\[\[report-bytes:(\d+)\]\]`)
)

// maxInteractionBody bounds a create's body: a query, its context and
// inline documents.
const maxInteractionBody = 24 << 20

type interactionStore struct {
	mu     sync.Mutex
	next   int
	byID   map[string]*fakeInteraction
	agents []string // nil: DefaultAgents
	denied map[string]bool
}

type fakeInteraction struct {
	id, agent, model, input, prev string
	context, documents            []string
	key                           string // the API key it was made with
	agentConfig                   json.RawMessage
	planning, background          bool
	turn                          int
	steps, reportBytes            int
	final                         string
	hold, malformed, cancelled    bool
	polls                         int
	created                       time.Time
}

// SetAgents sets the agents the Server lists and accepts.
func (s *Server) SetAgents(names ...string) {
	is := &s.interactions
	is.mu.Lock()
	defer is.mu.Unlock()
	is.agents = append([]string{}, names...)
}

// DenyAgent makes the Server refuse agent to the key with 403, as the API
// does for an agent the key's project may not use.
func (s *Server) DenyAgent(agent string) {
	is := &s.interactions
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.denied == nil {
		is.denied = map[string]bool{}
	}
	is.denied[agent] = true
}

// Interactions returns the ids of the interactions the Server holds.
func (s *Server) Interactions() []string {
	is := &s.interactions
	is.mu.Lock()
	defer is.mu.Unlock()
	var ids []string
	for id := range is.byID {
		ids = append(ids, id)
	}
	return ids
}

// ForgetInteractions drops every interaction the Server holds, as the API
// does with those past their retention period: a get, or a create that
// names one as previous_interaction_id, is then 404.
func (s *Server) ForgetInteractions() {
	is := &s.interactions
	is.mu.Lock()
	defer is.mu.Unlock()
	is.byID = nil
}

func (is *interactionStore) listed(agent string) bool {
	agents := is.agents
	if agents == nil {
		agents = DefaultAgents()
	}
	for _, a := range agents {
		if a == agent {
			return true
		}
	}
	return false
}

// serveInteractions answers the Interactions API and the agents list; it
// says false for any other path.
func (s *Server) serveInteractions(w http.ResponseWriter, r *http.Request, rec Request) bool {
	is := &s.interactions
	reply := func(v any) {
		rec.Status = http.StatusOK
		s.record(rec)
		b, _ := json.Marshal(v)
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
	}
	if agentsRE.MatchString(r.URL.Path) && r.Method == http.MethodGet {
		rec.Method = MethodAgentsList
		is.mu.Lock()
		names := is.agents
		if names == nil {
			names = DefaultAgents()
		}
		is.mu.Unlock()
		// In pages of page_size (default 50) from page_token (an index),
		// the SDK's ListAgentsRequest's parameters.
		size, err := strconv.Atoi(r.URL.Query().Get("page_size"))
		if err != nil || size <= 0 {
			size = 50
		}
		start, _ := strconv.Atoi(r.URL.Query().Get("page_token"))
		start = min(max(start, 0), len(names))
		end := min(start+size, len(names))
		agents := []map[string]any{}
		for _, n := range names[start:end] {
			agents = append(agents, map[string]any{"id": n, "description": "fake agent " + n})
		}
		page := map[string]any{"agents": agents}
		if end < len(names) {
			page["next_page_token"] = strconv.Itoa(end)
		}
		reply(page)
		return true
	}
	m := interactionRE.FindStringSubmatch(r.URL.Path)
	if m == nil {
		return false
	}
	id, cancel := m[1], m[2] != ""
	rec.Interaction = id
	switch {
	case id == "" && r.Method == http.MethodPost:
		rec.Method = MethodInteractionCreate
		raw, err := io.ReadAll(io.LimitReader(r.Body, maxInteractionBody+1))
		rec.Body = raw
		if err != nil || len(raw) > maxInteractionBody {
			s.failInteraction(w, rec, http.StatusBadRequest, "fakeapi: bad interactions body")
			return true
		}
		// A model's quota (ExhaustQuota) holds for its interactions too.
		var head struct {
			Model string `json:"model"`
		}
		if json.Unmarshal(raw, &head) == nil && head.Model != "" {
			q := rec
			q.Model = strings.TrimPrefix(head.Model, "models/")
			if s.refuseQuota(w, q) {
				return true
			}
		}
		fi, code, msg := is.create(raw, r.Header.Get("X-Goog-Api-Key"))
		if fi != nil {
			rec.Prompt, rec.Model = fi.input, fi.model
		}
		if code != 0 {
			s.failInteraction(w, rec, code, msg)
			return true
		}
		is.mu.Lock()
		v := fi.view()
		is.mu.Unlock()
		rec.Interaction = fi.id
		reply(v)
	case id != "" && r.Method == http.MethodGet && !cancel,
		id != "" && r.Method == http.MethodPost && cancel:
		rec.Method = MethodInteractionGet
		if cancel {
			rec.Method = MethodInteractionCancel
		}
		is.mu.Lock()
		fi := is.byID[id]
		if fi == nil || fi.key != r.Header.Get("X-Goog-Api-Key") {
			is.mu.Unlock()
			s.failInteraction(w, rec, http.StatusNotFound, InteractionNotFoundMessage(id))
			return true
		}
		if cancel && fi.background && !fi.done() {
			fi.cancelled = true
		} else if !cancel {
			fi.polls++
		}
		v, malformed := fi.view(), fi.malformed && !cancel
		is.mu.Unlock()
		if malformed {
			rec.Status = http.StatusOK
			s.record(rec)
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"`+id+`","status":"in_pro`)
			return true
		}
		reply(v)
	case id != "" && r.Method == http.MethodDelete && !cancel:
		rec.Method = MethodInteractionDelete
		is.mu.Lock()
		fi, ok := is.byID[id]
		ok = ok && fi.key == r.Header.Get("X-Goog-Api-Key")
		if ok {
			delete(is.byID, id)
		}
		is.mu.Unlock()
		if !ok {
			s.failInteraction(w, rec, http.StatusNotFound, InteractionNotFoundMessage(id))
			return true
		}
		reply(map[string]any{})
	default:
		rec.Method = r.Method + " " + r.URL.Path
		s.failInteraction(w, rec, http.StatusNotFound, "fakeapi: no such method")
	}
	return true
}

type interactionBody struct {
	Model       string          `json:"model"`
	Agent       string          `json:"agent"`
	AgentConfig json.RawMessage `json:"agent_config"`
	Input       json.RawMessage `json:"input"`
	Background  bool            `json:"background"`
	Store       *bool           `json:"store"`
	Previous    string          `json:"previous_interaction_id"`
	Generation  struct {
		ThinkingLevel *string `json:"thinking_level"`
	} `json:"generation_config"`
}

// ThinkingLevels are the values of generation_config.thinking_level the
// Server takes: those of the SDK's interactions.ThinkingLevel.
var ThinkingLevels = []string{"minimal", "low", "medium", "high"}

// create makes an interaction of the body; a non-zero code is the error to
// answer with instead (fi, when not nil, is still the parsed request).
func (is *interactionStore) create(raw []byte, key string) (*fakeInteraction, int, string) {
	var b interactionBody
	if err := json.Unmarshal(raw, &b); err != nil {
		return nil, http.StatusBadRequest, "fakeapi: bad interactions body: " + err.Error()
	}
	in, earlier, bad := inputSteps(b.Input)
	fi := &fakeInteraction{
		agent: b.Agent, model: b.Model, input: in.Input, context: in.Context, documents: in.Documents, prev: b.Previous,
		agentConfig: b.AgentConfig, background: b.Background, steps: 2, turn: 1 + earlier,
		final: "completed", created: time.Now().UTC(), key: key,
	}
	if bad != "" {
		return fi, http.StatusBadRequest, bad
	}
	if (b.Agent == "") == (b.Model == "") {
		return fi, http.StatusBadRequest, "fakeapi: an interaction names a model or an agent"
	}
	if fi.input == "" {
		return fi, http.StatusBadRequest, "fakeapi: an interaction needs input"
	}
	if m := statusRE.FindStringSubmatch(fi.input); m != nil {
		code, _ := strconv.Atoi(m[1])
		return fi, code, ErrorMessage(code)
	}
	if l := b.Generation.ThinkingLevel; l != nil && !slices.Contains(ThinkingLevels, *l) {
		return fi, http.StatusBadRequest, fmt.Sprintf("fakeapi: generation_config.thinking_level %q is not one of %s",
			*l, strings.Join(ThinkingLevels, ", "))
	}
	store := b.Store == nil || *b.Store
	if b.Background && !store {
		return fi, http.StatusBadRequest, BackgroundNoStoreMessage
	}
	if len(b.AgentConfig) > 0 {
		var cfg struct {
			Planning bool `json:"collaborative_planning"`
		}
		json.Unmarshal(b.AgentConfig, &cfg)
		fi.planning = cfg.Planning
	}
	if m := stepsRE.FindStringSubmatch(fi.input); m != nil {
		fi.steps, _ = strconv.Atoi(m[1])
	}
	if m := finalRE.FindStringSubmatch(fi.input); m != nil {
		fi.final = m[1]
	}
	if m := reportBytesRE.FindStringSubmatch(fi.input); m != nil {
		fi.reportBytes, _ = strconv.Atoi(m[1])
	}
	fi.hold = strings.Contains(fi.input, "[[hold]]")
	fi.malformed = strings.Contains(fi.input, "[[malformed]]")

	is.mu.Lock()
	defer is.mu.Unlock()
	if b.Agent != "" {
		if is.denied[b.Agent] {
			return fi, http.StatusForbidden, AgentDeniedMessage(b.Agent)
		}
		if !is.listed(b.Agent) {
			return fi, http.StatusNotFound, UnknownAgentMessage(b.Agent)
		}
	}
	if b.Previous != "" {
		prev := is.byID[b.Previous]
		if prev == nil || prev.key != key {
			return fi, http.StatusNotFound, InteractionNotFoundMessage(b.Previous)
		}
		fi.turn += prev.turn
	}
	is.next++
	fi.id = fmt.Sprintf("fake-interaction-%d", is.next)
	if store {
		if is.byID == nil {
			is.byID = map[string]*fakeInteraction{}
		}
		is.byID[fi.id] = fi
	}
	return fi, 0, ""
}

// failInteraction answers HTTP code with an error body in the shape of the
// SDK's interactions.Error (a string code).
func (s *Server) failInteraction(w http.ResponseWriter, rec Request, code int, msg string) {
	rec.Status, rec.Answer = code, msg
	s.record(rec)
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": statusName(code), "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(b)
}

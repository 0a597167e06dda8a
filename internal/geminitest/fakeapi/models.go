package fakeapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// Model is one entry of the Server's model list, in the API's JSON.
type Model struct {
	// Name is the resource name, "models/<id>".
	Name             string   `json:"name"`
	DisplayName      string   `json:"displayName,omitempty"`
	InputTokenLimit  int      `json:"inputTokenLimit,omitempty"`
	OutputTokenLimit int      `json:"outputTokenLimit,omitempty"`
	Methods          []string `json:"supportedGenerationMethods,omitempty"`
	Thinking         bool     `json:"thinking,omitempty"`
}

// TinyModel is a model of [DefaultModels] whose input limit is
// TinyModelLimit tokens, for tests of a conversation that outgrows it.
const (
	TinyModel      = "gemini-tiny-test"
	TinyModelLimit = 60
)

// DefaultModels is the model list a new Server serves: a few real model
// names, thinking or not, and [TinyModel].
func DefaultModels() []Model {
	gen := []string{"generateContent", "countTokens"}
	return []Model{
		{Name: "models/gemini-2.5-flash", InputTokenLimit: 1048576, OutputTokenLimit: 65536, Methods: gen, Thinking: true},
		{Name: "models/gemini-2.5-flash-lite", InputTokenLimit: 1048576, OutputTokenLimit: 65536, Methods: gen, Thinking: true},
		{Name: "models/gemini-2.5-pro", InputTokenLimit: 1048576, OutputTokenLimit: 65536, Methods: gen, Thinking: true},
		{Name: "models/gemini-3-pro-preview", InputTokenLimit: 1048576, OutputTokenLimit: 65536, Methods: gen, Thinking: true},
		{Name: "models/gemini-2.0-flash", InputTokenLimit: 1048576, OutputTokenLimit: 8192, Methods: gen},
		{Name: "models/text-embedding-004", InputTokenLimit: 2048, Methods: []string{"embedContent"}},
		{Name: "models/" + TinyModel, InputTokenLimit: TinyModelLimit, OutputTokenLimit: 100, Methods: gen},
	}
}

// InteractionsOnlyModel is a model the Server lists as served on the
// Interactions API alone (as Deep Think is): [InteractionsOnly] lists it
// with the method createInteraction and without generateContent. The
// API's reference does not give a name for such a method; the Server's is
// its own.
const InteractionsOnlyModel = "gemini-deep-think-test"

// InteractionsOnly is the model list entry of [InteractionsOnlyModel], for
// SetModels beside [DefaultModels].
func InteractionsOnly() Model {
	return Model{Name: "models/" + InteractionsOnlyModel, DisplayName: "Deep Think (test)", InputTokenLimit: 1048576,
		OutputTokenLimit: 65536, Methods: []string{"createInteraction", "countTokens"}, Thinking: true}
}

// BadKeyMessage is the message of the error the Server answers a request
// without the key [Server.RequireKey] set: the Gemini API's own words.
const BadKeyMessage = "API key not valid. Please pass a valid API key."

// RequireKey makes the Server refuse every request whose X-Goog-Api-Key is
// not key, as the Gemini API does: HTTP 400 INVALID_ARGUMENT with an
// ErrorInfo whose reason is API_KEY_INVALID. "" accepts any key again.
func (s *Server) RequireKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.key = key
}

// SetModels replaces the model list the Server serves.
func (s *Server) SetModels(models []Model) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.models = append([]Model(nil), models...)
}

// listModels answers GET /models: the page of pageSize (default 50)
// models starting at pageToken (an index).
func (s *Server) listModels(w http.ResponseWriter, r *http.Request, rec Request) {
	rec.Method = MethodListModels
	s.mu.Lock()
	models := append([]Model(nil), s.models...)
	s.mu.Unlock()
	size, err := strconv.Atoi(r.URL.Query().Get("pageSize"))
	if err != nil || size <= 0 {
		size = 50
	}
	start, _ := strconv.Atoi(r.URL.Query().Get("pageToken"))
	start = min(max(start, 0), len(models))
	end := min(start+size, len(models))
	// Like the API, an empty page leaves models out rather than null.
	page := map[string]any{}
	if end > start {
		page["models"] = models[start:end]
	}
	if end < len(models) {
		page["nextPageToken"] = strconv.Itoa(end)
	}
	rec.Status = http.StatusOK
	s.record(rec)
	b, _ := json.Marshal(page)
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// ThoughtTokens is the thoughtsTokenCount of an answer to a request that
// asks for thinking.
const ThoughtTokens = 7

// CountTokens is the Server's token count of a text: its number of
// words, which keeps test arithmetic simple.
func CountTokens(text string) int { return len(strings.Fields(text)) }

func countContents(cs []content) int {
	n := 0
	for _, c := range cs {
		for _, p := range c.Parts {
			n += CountTokens(p.Text)
		}
	}
	return n
}

// wantsThinking says whether a generationConfig asks for thinking: a
// level, a budget other than 0, or thought summaries.
func wantsThinking(gc json.RawMessage) bool {
	var v struct {
		ThinkingConfig *struct {
			ThinkingBudget  *int   `json:"thinkingBudget"`
			ThinkingLevel   string `json:"thinkingLevel"`
			IncludeThoughts bool   `json:"includeThoughts"`
		} `json:"thinkingConfig"`
	}
	if gc == nil || json.Unmarshal(gc, &v) != nil || v.ThinkingConfig == nil {
		return false
	}
	tc := v.ThinkingConfig
	if tc.ThinkingBudget != nil {
		return *tc.ThinkingBudget != 0
	}
	return tc.ThinkingLevel != "" || tc.IncludeThoughts
}

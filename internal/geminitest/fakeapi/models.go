package fakeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
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

// wantsThinking says whether a generationConfig asks for thinking.
func wantsThinking(gc json.RawMessage) bool {
	var v struct {
		ThinkingConfig *struct {
			ThinkingBudget *int   `json:"thinkingBudget"`
			ThinkingLevel  string `json:"thinkingLevel"`
		} `json:"thinkingConfig"`
	}
	if gc == nil || json.Unmarshal(gc, &v) != nil || v.ThinkingConfig == nil {
		return false
	}
	tc := v.ThinkingConfig
	return tc.ThinkingLevel != "" || tc.ThinkingBudget != nil && *tc.ThinkingBudget != 0
}

// split cuts s into n pieces of about equal length, on rune boundaries;
// none is empty unless s is shorter than n runes.
func split(s string, n int) []string {
	runes := utf8.RuneCountInString(s)
	if n > runes {
		n = max(runes, 1)
	}
	out := make([]string, 0, n)
	for i := n; i > 0; i-- {
		k := utf8.RuneCountInString(s) / i
		j := len(firstRunes(s, k))
		out = append(out, s[:j])
		s = s[j:]
	}
	return out
}

// WaitFor waits until ok holds for the requests recorded so far (see
// [Server.Requests]), checking again each time one arrives or is
// recorded, or until ctx ends.
func (s *Server) WaitFor(ctx context.Context, ok func([]Request) bool) error {
	return s.wait(ctx, func() []Request { return s.reqs }, ok)
}

// WaitArrived waits until ok holds for the requests arrived so far (see
// [Server.Arrived]: answered or not), or until ctx ends.
func (s *Server) WaitArrived(ctx context.Context, ok func([]Request) bool) error {
	return s.wait(ctx, func() []Request { return s.arrived }, ok)
}

// WaitStream waits until a turn (a streamGenerateContent request, not the
// CLI's model-router call before it, which carries the same prompt) whose
// last user text holds marker has arrived, answered or not, and returns
// it; or until ctx ends.
func (s *Server) WaitStream(ctx context.Context, marker string) (Request, error) {
	var got Request
	err := s.WaitArrived(ctx, func(rs []Request) bool {
		for _, r := range rs {
			if r.Method == MethodStream && strings.Contains(r.LastUserText, marker) {
				got = r
				return true
			}
		}
		return false
	})
	return got, err
}

// wait waits until ok holds for the list of requests which (called under
// s.mu) returns, checking again at each arrival and record.
func (s *Server) wait(ctx context.Context, which func() []Request, ok func([]Request) bool) error {
	for {
		s.mu.Lock()
		reqs := append([]Request(nil), which()...)
		changed := s.changed
		s.mu.Unlock()
		if ok(reqs) {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("fakeapi: waiting for requests: %w", context.Cause(ctx))
		}
	}
}

// Package fakeapi is a fake Gemini API for tests that run the real Gemini CLI
// offline, and for the tests of the API backend, which talks to it through
// the Go SDK.
//
// A Server listens on 127.0.0.1 only and answers the two calls the CLI makes:
//
//   - POST /v1beta/models/<model>:streamGenerateContent?alt=sse, the turn
//     itself, answered with one server-sent event whose text is
//     deterministic (see [Answer]);
//   - POST /v1beta/models/<model>:generateContent, used by the CLI's model
//     router and for session titles, answered with the router's JSON
//     ([RouterAnswer]);
//
// and two more the API backend makes:
//
//   - GET /v1beta/models, the model list ([Server.SetModels], by default
//     [DefaultModels]), in pages of pageSize;
//   - POST /v1beta/models/<model>:countTokens, answered with [CountTokens]
//     of the contents.
//
// Streamed answers carry usageMetadata: promptTokenCount is [CountTokens]
// of the contents, candidatesTokenCount that of the answer, and
// thoughtsTokenCount is [ThoughtTokens] when the request asks for thinking
// (a thinkingConfig with a level or a non-zero budget).
//
// Every request is recorded ([Server.Requests]). The text of the last user
// content of a streamGenerateContent request may carry directives:
//
//   - [[status:N]] answers HTTP N with a Google API error body whose message
//     is "fake error N" (see [ErrorMessage]);
//   - [[sleep:MS]] waits MS milliseconds (or until the request is cancelled)
//     before answering;
//   - [[call:NAME:{JSON}]] answers with a functionCall part instead of text:
//     the model calls the function NAME (letters, digits, '_', '.', '-') with
//     the JSON object as its arguments. NAME must be one the request offers
//     in tools (see [Request.Tools]); the CLI then runs the tool and sends
//     its result back in a functionResponse part. Several [[call:…]]
//     directives answer with as many functionCall parts, in their order, in
//     one answer: parallel calls;
//   - [[then-call:NAME:{JSON}]] is a call for a later round: the request
//     that brings back the results of round R (the R-th model answer with
//     function calls since the prompt) is answered with the R-th
//     [[then-call:…]] directive of the prompt as a functionCall part,
//     instead of the results' text; once they are used up, with the text;
//   - [[loop-call:NAME:{JSON}]] answers every request that brings back
//     function results with this call again: a model that never stops
//     calling, to test a client's bound on rounds;
//   - [[fail:N:CODE]] answers HTTP CODE, as [[status:CODE]] does, to the
//     first N requests with this same last user text, and normally after
//     that (a transient error that a retry gets past);
//   - [[retry-delay:D]] adds a google.rpc.RetryInfo detail whose retryDelay
//     is D (a protobuf duration such as "0.05s") to the error answered;
//   - [[chunks:N]] streams the answer in N events (the answer is cut into N
//     pieces of about equal size);
//   - [[bytes:N]] lengthens the answer to N bytes: the usual text, then
//     numbered filler lines (see [LongAnswer]), for tests of answers too
//     long for one result;
//   - [[stall]] streams the first event, then holds the stream open until
//     the client goes away, and records the request with Ended set;
//   - [[finish:REASON]] answers a candidate without content whose
//     finishReason is REASON (e.g. SAFETY);
//   - [[block:REASON]] answers no candidate and a promptFeedback whose
//     blockReason is REASON (e.g. SAFETY);
//   - [[continuation]] answers with finishReason CONTINUATION and a
//     continuationToken, as the API does for an answer it will go on with
//     when asked (a request that carries the token is answered normally).
//
// Some directives make the Server a hostile or broken peer, to test a
// client's bounds. Each still speaks the API's wire format (server-sent
// events whose data is a GenerateContentResponse), only with what a real
// API should never send:
//
//   - [[null-candidate]] streams one event whose data is
//     {"candidates":[null]};
//   - [[no-finish]] streams the usual answer, but no event carries a
//     finishReason: the stream closes cleanly half-way through an answer;
//     [[no-finish:N]] does so for the first N requests with this same
//     last user text, and answers normally after that;
//   - [[big-frame:N]] streams the answer as one event of N bytes or more
//     (its text is [LongAnswer] of N bytes), with finishReason STOP;
//   - [[call-flood:NAME:N]] streams events of one functionCall part each,
//     calling NAME with a filler argument of about 1 KiB, none with a
//     finishReason, until N bytes have been sent or the client goes away;
//   - [[drip:MS]] streams an event of a few bytes of text every MS
//     milliseconds, none with a finishReason, until the client goes away.
//
// A hostile stream is recorded when it ends, with Ended set when the
// client went away first, and Sent the bytes of events written.
//
// A request whose last content carries functionResponse parts (the results
// of the function calls the model asked for) is answered with text that
// holds them (see [FunctionResultAnswer]) and is recorded with them in
// [Request.FunctionResponses]; of the directives, only [[then-call:…]] and
// [[loop-call:…]] in the prompt (the last user content with text) apply to
// it, and none when the request's toolConfig sets function calling mode
// NONE (the model may not call functions).
//
// [Home] prepares a throwaway home directory in which the CLI talks to a
// Server and to nothing else, and [RealCLI] finds the real CLI for tests
// that need it.
package fakeapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// Methods of the Gemini API that the Server answers, as recorded in
// [Request.Method].
const (
	MethodStream      = "streamGenerateContent"
	MethodGenerate    = "generateContent"
	MethodCountTokens = "countTokens"
	MethodListModels  = "models.list"
)

// RouterAnswer is the text of every generateContent answer. It satisfies the
// CLI's model router (which wants a complexity_score of at least 1) and makes
// an acceptable, if odd, session title.
const RouterAnswer = `{"reasoning":"r","complexity_reasoning":"r","complexity_score":50,"model_choice":"flash"}`

// Request is one API call as the Server saw it.
type Request struct {
	// Method is MethodStream or MethodGenerate.
	Method string
	// Model is the model name from the URL path.
	Model string
	// SystemInstruction is the text of systemInstruction's parts, joined
	// with newlines; empty when the request has none.
	SystemInstruction string
	// NumContents is the number of entries in contents (the history plus
	// the new turn).
	NumContents int
	// LastUserText is the text of the last content whose role is "user",
	// its text parts joined with newlines, leaving out the part the CLI
	// adds to the first turn that starts with "<session_context>". On a
	// turn started with a prompt it is that prompt.
	LastUserText string
	// Tools are the names of the function declarations the request offers
	// the model, in the order of its tools entries.
	Tools []string
	// FunctionResponses are the functionResponse parts of the request's
	// last content: the results of the function calls the model asked for
	// in its previous answer. LastUserText is then usually "", as that
	// content has no text.
	FunctionResponses []FunctionResponse
	// FunctionCall is the function call the Server answered with
	// ([[call:NAME:{JSON}]]); nil when it answered with text. When it
	// answered with several, it is the first.
	FunctionCall *FunctionCall
	// FunctionCalls are all the function calls the Server answered with,
	// in their order.
	FunctionCalls []FunctionCall
	// Prompt is the text of the last user content that has text: the
	// turn's prompt, also on a request that brings back function results.
	Prompt string
	// Round is, on a request that brings back function results, the number
	// of model answers with function calls since the prompt; 0 otherwise.
	Round int
	// ToolMode is the request's toolConfig.functionCallingConfig.mode ("" when
	// it sets none).
	ToolMode string
	// Status is the HTTP status the Server answered with.
	Status int
	// Answer is the text the Server answered with (the error message when
	// Status is not 200).
	Answer string
	// Body is the raw request body.
	Body []byte
	// GenerationConfig is the request's generationConfig as sent, nil when
	// it has none.
	GenerationConfig json.RawMessage
	// Ended says the client went away before the Server had finished the
	// answer (a [[stall]]ed or [[sleep]]ing stream it cancelled).
	Ended bool
	// Sent is the number of bytes of events written for a hostile stream
	// ([[call-flood]], [[drip]]), 0 for others.
	Sent int64
	// Time is when the request arrived.
	Time time.Time
}

// FunctionCall is a functionCall part: the model asks the CLI to run the
// function (tool) Name with Args.
type FunctionCall struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// FunctionResponse is a functionResponse part: the result the CLI sends back
// for the function call Name. Response is the response object as sent.
type FunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
	// Parts are the multimodal parts nested in the response (inline
	// data), as sent; nil when there are none.
	Parts json.RawMessage `json:"parts,omitempty"`
}

// Server is a fake Gemini API. Its methods are safe for concurrent use.
type Server struct {
	ts *httptest.Server

	mu      sync.Mutex
	reqs    []Request
	arrived []Request     // as they came in, before any answer or delay
	changed chan struct{} // closed and replaced when a request is recorded
	models  []Model
	failed  map[string]int // [[fail]] answers given, by last user text
	key     string         // the API key required, "" for any

	closeOnce sync.Once
}

// New starts a Server on 127.0.0.1 with a random port. The caller must Close
// it (in tests: t.Cleanup(s.Close)).
func New() *Server {
	s := &Server{changed: make(chan struct{}), models: DefaultModels(), failed: map[string]int{}}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(s.serveHTTP))
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		panic(fmt.Sprintf("fakeapi: listen on 127.0.0.1: %v", err))
	}
	ts.Listener.Close()
	ts.Listener = ln
	ts.Start()
	s.ts = ts
	return s
}

// URL returns the base URL, http://127.0.0.1:PORT, to put in
// GOOGLE_GEMINI_BASE_URL.
func (s *Server) URL() string { return s.ts.URL }

// Arrived returns the requests received so far, in arrival order, as they
// were when they came in (no Status or Answer yet): unlike Requests it
// includes those still waiting on a [[sleep:MS]] directive, so a test can
// tell that a client is waiting on the API.
func (s *Server) Arrived() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.arrived))
	copy(out, s.arrived)
	return out
}

// Requests returns a copy of the requests seen so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Request, len(s.reqs))
	copy(out, s.reqs)
	return out
}

// Close stops the Server, cutting any request still running. It may be
// called more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		s.ts.CloseClientConnections()
		s.ts.Close()
	})
}

// Answer returns the text the Server streams back for a turn: it names the
// model, the number of contents, whether a system instruction was present,
// and the first 40 runes of the last user text.
func Answer(model string, numContents int, system, lastUserText string) string {
	sys := "no"
	if system != "" {
		sys = "yes"
	}
	return fmt.Sprintf("fake-api answer: model=%s contents=%d system=%s last=%s",
		model, numContents, sys, firstRunes(lastUserText, 40))
}

// LongAnswer returns answer lengthened to n bytes (when it is shorter) by
// numbered filler lines, so that every page of it differs from the others.
func LongAnswer(answer string, n int) string {
	var b strings.Builder
	b.WriteString(answer)
	for i := 1; b.Len() < n; i++ {
		fmt.Fprintf(&b, "\nfiller line %d of a long fake answer", i)
	}
	s := b.String()
	if len(s) > n && n >= len(answer) {
		s = s[:n]
	}
	return s
}

// FunctionResultAnswer returns the text the Server streams back for a
// request that carries the results of function calls: each call's name and
// its response object, as compact JSON, one per line.
func FunctionResultAnswer(responses []FunctionResponse) string {
	var b strings.Builder
	b.WriteString("fake-api answer: function results:")
	for _, r := range responses {
		resp := r.Response
		var buf bytes.Buffer
		if json.Compact(&buf, resp) == nil {
			resp = buf.Bytes()
		}
		fmt.Fprintf(&b, "\n%s returned %s", r.Name, resp)
	}
	return b.String()
}

// ErrorMessage returns the message of the error the Server answers for
// [[status:N]].
func ErrorMessage(status int) string { return fmt.Sprintf("fake error %d", status) }

// Settings is the settings.json [Home] writes: API-key auth (required with
// GOOGLE_GEMINI_BASE_URL), no folder trust prompts, no telemetry or usage
// statistics, no update checks, no IDE, and no session cleanup (which hits
// upstream bug google-gemini/gemini-cli#27368).
const Settings = `{"security":{"auth":{"selectedType":"gemini-api-key"},"folderTrust":{"enabled":false}},` +
	`"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},` +
	`"general":{"enableAutoUpdate":false,"enableAutoUpdateNotification":false,"sessionRetention":{"enabled":false}},` +
	`"ide":{"enabled":false}}`

// Home makes dir a Gemini CLI home that talks to the API at baseURL: it
// writes dir/.gemini/settings.json ([Settings]) and returns the environment
// entries HOME=dir, GEMINI_API_KEY and GOOGLE_GEMINI_BASE_URL=baseURL. The
// CLI then keeps its sessions under dir/.gemini/tmp.
func Home(tb testing.TB, dir, baseURL string) []string {
	tb.Helper()
	gdir := filepath.Join(dir, ".gemini")
	if err := os.MkdirAll(gdir, 0o755); err != nil {
		tb.Fatalf("fakeapi: %v", err)
	}
	if err := os.WriteFile(filepath.Join(gdir, "settings.json"), []byte(Settings+"\n"), 0o644); err != nil {
		tb.Fatalf("fakeapi: %v", err)
	}
	return []string{
		"HOME=" + dir,
		"GEMINI_API_KEY=fakeapi-key",
		"GOOGLE_GEMINI_BASE_URL=" + baseURL,
	}
}

// Home is [Home] for this Server's URL.
func (s *Server) Home(tb testing.TB, dir string) []string {
	tb.Helper()
	return Home(tb, dir, s.URL())
}

var (
	pathRE   = regexp.MustCompile(`^/v1(?:beta|alpha|)/models/([^/:]+):(streamGenerateContent|generateContent|countTokens)$`)
	modelsRE = regexp.MustCompile(`^/v1(?:beta|alpha|)/models$`)
	failRE   = regexp.MustCompile(`\[\[fail:(\d+):(\d{3})\]\]`)
	delayRE  = regexp.MustCompile(`\[\[retry-delay:([0-9.]+s)\]\]`)
	chunksRE = regexp.MustCompile(`\[\[chunks:(\d+)\]\]`)
	bytesRE  = regexp.MustCompile(`\[\[bytes:(\d+)\]\]`)
	finishRE = regexp.MustCompile(`\[\[finish:([A-Z_]+)\]\]`)
	blockRE  = regexp.MustCompile(`\[\[block:([A-Z_]+)\]\]`)
	statusRE = regexp.MustCompile(`\[\[status:(\d{3})\]\]`)
	sleepRE  = regexp.MustCompile(`\[\[sleep:(\d+)\]\]`)
	callRE   = regexp.MustCompile(`(?s)\[\[call:([A-Za-z0-9_.-]+):(\{.*?\})\]\]`)
	thenRE   = regexp.MustCompile(`(?s)\[\[then-call:([A-Za-z0-9_.-]+):(\{.*?\})\]\]`)
	loopRE   = regexp.MustCompile(`(?s)\[\[loop-call:([A-Za-z0-9_.-]+):(\{.*?\})\]\]`)
	bigRE    = regexp.MustCompile(`\[\[big-frame:(\d+)\]\]`)
	floodRE  = regexp.MustCompile(`\[\[call-flood:([A-Za-z0-9_.-]+):(\d+)\]\]`)
	dripRE   = regexp.MustCompile(`\[\[drip:(\d+)\]\]`)
	cutRE    = regexp.MustCompile(`\[\[no-finish(?::(\d+))?\]\]`)
)

type part struct {
	Text             string            `json:"text"`
	FunctionResponse *FunctionResponse `json:"functionResponse"`
	FunctionCall     *FunctionCall     `json:"functionCall"`
}

type content struct {
	Role  string `json:"role"`
	Parts []part `json:"parts"`
}

type apiRequest struct {
	SystemInstruction *content        `json:"systemInstruction"`
	Contents          []content       `json:"contents"`
	GenerationConfig  json.RawMessage `json:"generationConfig"`
	Tools             []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	ToolConfig struct {
		FunctionCallingConfig struct {
			Mode string `json:"mode"`
		} `json:"functionCallingConfig"`
	} `json:"toolConfig"`
}

func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	rec := Request{Time: time.Now()}
	s.mu.Lock()
	key := s.key
	s.mu.Unlock()
	if key != "" && r.Header.Get("X-Goog-Api-Key") != key {
		// The Gemini API's own answer to a bad key: 400, not 401.
		rec.Method = r.Method + " " + r.URL.Path
		s.failWith(w, rec, http.StatusBadRequest, BadKeyMessage, []any{map[string]any{
			"@type":  "type.googleapis.com/google.rpc.ErrorInfo",
			"reason": "API_KEY_INVALID",
			"domain": "googleapis.com",
		}})
		return
	}
	if r.Method == http.MethodGet && modelsRE.MatchString(r.URL.Path) {
		s.listModels(w, r, rec)
		return
	}
	m := pathRE.FindStringSubmatch(r.URL.Path)
	if m == nil {
		rec.Method = r.Method + " " + r.URL.Path
		s.fail(w, rec, http.StatusNotFound, "fakeapi: no such method")
		return
	}
	rec.Model, rec.Method = m[1], m[2]
	if r.Method != http.MethodPost {
		rec.Method = r.Method + " " + r.URL.Path
		s.fail(w, rec, http.StatusNotFound, "fakeapi: no such method")
		return
	}
	body, err := io.ReadAll(r.Body)
	rec.Body = body
	if err != nil {
		s.fail(w, rec, http.StatusBadRequest, "fakeapi: read body: "+err.Error())
		return
	}
	var req apiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		s.fail(w, rec, http.StatusBadRequest, "fakeapi: bad JSON: "+err.Error())
		return
	}
	if req.SystemInstruction != nil {
		rec.SystemInstruction = joinParts(req.SystemInstruction.Parts)
	}
	rec.GenerationConfig = req.GenerationConfig
	rec.NumContents = len(req.Contents)
	for _, t := range req.Tools {
		for _, fd := range t.FunctionDeclarations {
			rec.Tools = append(rec.Tools, fd.Name)
		}
	}
	if n := len(req.Contents); n > 0 {
		for _, p := range req.Contents[n-1].Parts {
			if p.FunctionResponse != nil {
				rec.FunctionResponses = append(rec.FunctionResponses, *p.FunctionResponse)
			}
		}
	}
	for i := len(req.Contents) - 1; i >= 0; i-- {
		if req.Contents[i].Role == "user" {
			rec.LastUserText = joinParts(withoutContext(req.Contents[i].Parts))
			break
		}
	}
	rec.ToolMode = req.ToolConfig.FunctionCallingConfig.Mode
	for i := len(req.Contents) - 1; i >= 0; i-- {
		c := req.Contents[i]
		if c.Role == "user" {
			if text := joinParts(withoutContext(c.Parts)); text != "" {
				rec.Prompt = text
				break
			}
		}
		if c.Role == "model" && len(rec.FunctionResponses) > 0 && slices.ContainsFunc(c.Parts, func(p part) bool { return p.FunctionCall != nil }) {
			rec.Round++
		}
	}

	s.mu.Lock()
	s.arrived = append(s.arrived, rec)
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()

	if rec.Method == MethodCountTokens {
		rec.Status = http.StatusOK
		s.record(rec)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"totalTokens":%d}`, countContents(req.Contents))
		return
	}
	if rec.Method == MethodGenerate {
		rec.Status, rec.Answer = http.StatusOK, RouterAnswer
		s.record(rec)
		w.Header().Set("Content-Type", "application/json")
		w.Write(responseJSON(RouterAnswer))
		return
	}

	if len(rec.FunctionResponses) > 0 {
		if rec.ToolMode != "NONE" {
			var next *FunctionCall
			if lm := loopRE.FindStringSubmatch(rec.Prompt); lm != nil {
				next = &FunctionCall{Name: lm[1], Args: json.RawMessage(lm[2])}
			} else if tm := thenRE.FindAllStringSubmatch(rec.Prompt, -1); rec.Round >= 1 && rec.Round <= len(tm) {
				next = &FunctionCall{Name: tm[rec.Round-1][1], Args: json.RawMessage(tm[rec.Round-1][2])}
			}
			if next != nil {
				if !json.Valid(next.Args) {
					s.fail(w, rec, http.StatusBadRequest, "fakeapi: [[then-call]] arguments are not a JSON object")
					return
				}
				rec.Status = http.StatusOK
				rec.FunctionCall, rec.FunctionCalls = next, []FunctionCall{*next}
				s.record(rec)
				s.stream(w, functionCallJSON(*next))
				return
			}
		}
		rec.Status = http.StatusOK
		rec.Answer = FunctionResultAnswer(rec.FunctionResponses)
		s.record(rec)
		s.stream(w, responseJSON(rec.Answer))
		return
	}

	if sm := sleepRE.FindStringSubmatch(rec.LastUserText); sm != nil {
		ms, _ := strconv.Atoi(sm[1])
		t := time.NewTimer(time.Duration(ms) * time.Millisecond)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			rec.Ended = true
		}
	}
	var details []any
	if dm := delayRE.FindStringSubmatch(rec.LastUserText); dm != nil {
		details = append(details, map[string]any{
			"@type":      "type.googleapis.com/google.rpc.RetryInfo",
			"retryDelay": dm[1],
		})
	}
	if sm := statusRE.FindStringSubmatch(rec.LastUserText); sm != nil {
		code, _ := strconv.Atoi(sm[1])
		if code != http.StatusOK {
			s.failWith(w, rec, code, ErrorMessage(code), details)
			return
		}
	}
	if fm := failRE.FindStringSubmatch(rec.LastUserText); fm != nil {
		n, _ := strconv.Atoi(fm[1])
		code, _ := strconv.Atoi(fm[2])
		s.mu.Lock()
		k := s.failed[rec.LastUserText]
		if k < n {
			s.failed[rec.LastUserText] = k + 1
		}
		s.mu.Unlock()
		if k < n {
			s.failWith(w, rec, code, ErrorMessage(code), details)
			return
		}
	}
	if bm := blockRE.FindStringSubmatch(rec.LastUserText); bm != nil {
		rec.Status = http.StatusOK
		s.record(rec)
		b, _ := json.Marshal(map[string]any{"promptFeedback": map[string]any{"blockReason": bm[1]}})
		s.stream(w, b)
		return
	}
	if strings.Contains(rec.LastUserText, "[[continuation]]") && !bytes.Contains(body, []byte(`"continuationToken"`)) {
		rec.Status = http.StatusOK
		rec.Answer = Answer(rec.Model, rec.NumContents, rec.SystemInstruction, rec.LastUserText)
		s.record(rec)
		b, _ := json.Marshal(map[string]any{"candidates": []any{map[string]any{
			"content":           map[string]any{"role": "model", "parts": []any{map[string]any{"text": rec.Answer}}},
			"finishReason":      "CONTINUATION",
			"continuationToken": "Y29udGludWU=",
			"index":             0,
		}}})
		s.stream(w, b)
		return
	}
	if fm := finishRE.FindStringSubmatch(rec.LastUserText); fm != nil {
		rec.Status = http.StatusOK
		s.record(rec)
		b, _ := json.Marshal(map[string]any{"candidates": []any{map[string]any{"finishReason": fm[1], "index": 0}}})
		s.stream(w, b)
		return
	}

	if s.hostile(w, r, rec) {
		return
	}

	if cms := callRE.FindAllStringSubmatch(rec.LastUserText, -1); cms != nil {
		for _, cm := range cms {
			var args map[string]any
			if err := json.Unmarshal([]byte(cm[2]), &args); err != nil {
				s.fail(w, rec, http.StatusBadRequest, "fakeapi: [[call]] arguments are not a JSON object: "+err.Error())
				return
			}
			rec.FunctionCalls = append(rec.FunctionCalls, FunctionCall{Name: cm[1], Args: json.RawMessage(cm[2])})
		}
		rec.Status = http.StatusOK
		rec.FunctionCall = &rec.FunctionCalls[0]
		s.record(rec)
		s.stream(w, functionCallJSON(rec.FunctionCalls...))
		return
	}

	rec.Status = http.StatusOK
	rec.Answer = Answer(rec.Model, rec.NumContents, rec.SystemInstruction, rec.LastUserText)
	if bm := bytesRE.FindStringSubmatch(rec.LastUserText); bm != nil {
		n, _ := strconv.Atoi(bm[1])
		rec.Answer = LongAnswer(rec.Answer, n)
	}
	usage := map[string]any{"promptTokenCount": countContents(req.Contents), "candidatesTokenCount": CountTokens(rec.Answer)}
	if wantsThinking(req.GenerationConfig) {
		usage["thoughtsTokenCount"] = ThoughtTokens
	}
	n := 1
	if cm := chunksRE.FindStringSubmatch(rec.LastUserText); cm != nil {
		n, _ = strconv.Atoi(cm[1])
	}
	pieces := split(rec.Answer, max(n, 1))
	if strings.Contains(rec.LastUserText, "[[stall]]") {
		// The first piece goes out, then nothing until the client leaves.
		s.stream(w, textJSON(pieces[0], nil))
		<-r.Context().Done()
		rec.Ended = true
		s.record(rec)
		return
	}
	cut := false
	if m := cutRE.FindStringSubmatch(rec.LastUserText); m != nil {
		cut = true
		if m[1] != "" {
			n, _ := strconv.Atoi(m[1])
			s.mu.Lock()
			k := s.failed["no-finish\x00"+rec.LastUserText]
			if cut = k < n; cut {
				s.failed["no-finish\x00"+rec.LastUserText] = k + 1
			}
			s.mu.Unlock()
		}
	}
	s.record(rec)
	frames := make([][]byte, len(pieces))
	for i, p := range pieces {
		var u map[string]any
		if i == len(pieces)-1 {
			u = usage
		}
		frames[i] = textJSON(p, u)
		if u != nil && cut {
			// The same last event, without its finishReason.
			var m map[string]any
			_ = json.Unmarshal(frames[i], &m)
			delete(m["candidates"].([]any)[0].(map[string]any), "finishReason")
			frames[i], _ = json.Marshal(m)
		}
	}
	s.stream(w, frames...)
}

// hostile answers the directives of a hostile peer, if rec's prompt has
// one, and says whether it did.
func (s *Server) hostile(w http.ResponseWriter, r *http.Request, rec Request) bool {
	text := rec.LastUserText
	switch {
	case strings.Contains(text, "[[null-candidate]]"):
		rec.Status = http.StatusOK
		s.record(rec)
		s.stream(w, []byte(`{"candidates":[null]}`))
		return true
	case bigRE.MatchString(text):
		n, _ := strconv.Atoi(bigRE.FindStringSubmatch(text)[1])
		rec.Status = http.StatusOK
		rec.Answer = LongAnswer(Answer(rec.Model, rec.NumContents, rec.SystemInstruction, text), n)
		s.record(rec)
		s.stream(w, textJSON(rec.Answer, map[string]any{"promptTokenCount": 1, "candidatesTokenCount": 1}))
		return true
	case floodRE.MatchString(text):
		m := floodRE.FindStringSubmatch(text)
		limit, _ := strconv.ParseInt(m[2], 10, 64)
		frame := functionCallJSON(FunctionCall{Name: m[1], Args: json.RawMessage(`{"filler":"` + strings.Repeat("x", 1000) + `"}`)})
		var m2 map[string]any
		_ = json.Unmarshal(frame, &m2)
		delete(m2["candidates"].([]any)[0].(map[string]any), "finishReason")
		frame, _ = json.Marshal(m2)
		rec.Status = http.StatusOK
		s.flood(w, r, rec, limit, func(int) []byte { return frame })
		return true
	case dripRE.MatchString(text):
		ms, _ := strconv.Atoi(dripRE.FindStringSubmatch(text)[1])
		rec.Status = http.StatusOK
		tick := time.NewTicker(max(time.Duration(ms), 1) * time.Millisecond)
		defer tick.Stop()
		s.flood(w, r, rec, -1, func(i int) []byte {
			if i > 0 {
				select {
				case <-tick.C:
				case <-r.Context().Done():
				}
			}
			return textJSON(fmt.Sprintf("drop %d. ", i), nil)
		})
		return true
	}
	return false
}

// flood streams the events next returns, the i-th for i = 0, 1, …, until
// limit bytes have been written (limit < 0: no limit) or the client goes
// away, then records rec.
func (s *Server) flood(w http.ResponseWriter, r *http.Request, rec Request, limit int64, next func(i int) []byte) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fl, _ := w.(http.Flusher)
	for i := 0; limit < 0 || rec.Sent < limit; i++ {
		f := next(i)
		if r.Context().Err() != nil {
			rec.Ended = true
			break
		}
		n, err := fmt.Fprintf(w, "data: %s\n\n", f)
		rec.Sent += int64(n)
		if err == nil && fl != nil {
			fl.Flush()
		}
		if err != nil {
			rec.Ended = true
			break
		}
	}
	s.record(rec)
}

// stream answers with one server-sent event per frame, flushing each.
func (s *Server) stream(w http.ResponseWriter, frames ...[]byte) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	for _, f := range frames {
		fmt.Fprintf(w, "data: %s\n\n", f)
		if fl, ok := w.(http.Flusher); ok {
			fl.Flush()
		}
	}
}

// fail records rec and answers with a Google API error.
func (s *Server) fail(w http.ResponseWriter, rec Request, code int, msg string) {
	s.failWith(w, rec, code, msg, nil)
}

// failWith is fail with the error's details.
func (s *Server) failWith(w http.ResponseWriter, rec Request, code int, msg string, details []any) {
	rec.Status, rec.Answer = code, msg
	s.record(rec)
	e := map[string]any{"code": code, "message": msg, "status": statusName(code)}
	if details != nil {
		e["details"] = details
	}
	b, _ := json.Marshal(map[string]any{"error": e})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	w.Write(b)
}

func (s *Server) record(rec Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, rec)
	close(s.changed)
	s.changed = make(chan struct{})
}

// responseJSON is a GenerateContentResponse with one candidate saying text.
func responseJSON(text string) []byte {
	return candidateJSON(map[string]any{"text": text})
}

// functionCallJSON is a GenerateContentResponse with one candidate calling
// functions, one part each.
func functionCallJSON(fcs ...FunctionCall) []byte {
	parts := make([]any, len(fcs))
	for i, fc := range fcs {
		parts[i] = map[string]any{"functionCall": fc}
	}
	return candidateJSON(parts...)
}

// textJSON is a stream event with one candidate saying text, and usage
// when not nil.
func textJSON(text string, usage map[string]any) []byte {
	m := map[string]any{
		"candidates": []any{map[string]any{
			"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}},
			"index":   0,
		}},
	}
	if usage != nil {
		m["candidates"].([]any)[0].(map[string]any)["finishReason"] = "STOP"
		m["usageMetadata"] = usage
	}
	b, _ := json.Marshal(m)
	return b
}

func candidateJSON(parts ...any) []byte {
	b, _ := json.Marshal(map[string]any{
		"candidates": []any{map[string]any{
			"content":      map[string]any{"role": "model", "parts": parts},
			"finishReason": "STOP",
			"index":        0,
		}},
		"usageMetadata": map[string]any{"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
	})
	return b
}

// statusName is the google.rpc.Code name Google's APIs pair with an HTTP
// status.
func statusName(code int) string {
	switch code {
	case 400:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 500:
		return "INTERNAL"
	case 503:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	return "UNKNOWN"
}

// withoutContext drops the <session_context> part the CLI puts before the
// first prompt of a session.
func withoutContext(ps []part) []part {
	out := make([]part, 0, len(ps))
	for _, p := range ps {
		if !strings.HasPrefix(p.Text, "<session_context>") {
			out = append(out, p)
		}
	}
	return out
}

func joinParts(ps []part) string {
	texts := make([]string, 0, len(ps))
	for _, p := range ps {
		if p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

func firstRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for k := 0; k < n; k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

// Environment variables that gate the tests running the real Gemini CLI.
const (
	// EnvGemini holds the path of the real gemini executable.
	EnvGemini = "GEMINI_MCP_E2E_GEMINI"
	// EnvRequired set to 1 turns a missing EnvGemini into a failure.
	EnvRequired = "GEMINI_MCP_E2E_REQUIRED"
)

// RealCLI returns the path of the real Gemini CLI named by $GEMINI_MCP_E2E_GEMINI.
// When that is unset it skips the test, except in CI ($CI non-empty) or when
// $GEMINI_MCP_E2E_REQUIRED=1, where it fails it: such tests must never be
// skipped silently in CI.
func RealCLI(tb testing.TB) string {
	tb.Helper()
	path := os.Getenv(EnvGemini)
	if path == "" {
		msg := EnvGemini + " is not set: it must name the real Gemini CLI " +
			"(e.g. npm install --prefix DIR @google/gemini-cli@0.61.0; " + EnvGemini + "=DIR/node_modules/.bin/gemini)"
		if os.Getenv("CI") != "" || os.Getenv(EnvRequired) == "1" {
			tb.Fatalf("%s; required because CI or %s=1 is set", msg, EnvRequired)
		}
		tb.Skip(msg)
	}
	if _, err := os.Stat(path); err != nil {
		tb.Fatalf("%s: %v", EnvGemini, err)
	}
	return path
}

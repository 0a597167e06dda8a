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
// of the contents, candidatesTokenCount that of the answer,
// thoughtsTokenCount is [ThoughtTokens] when the request asks for thinking
// (a thinkingConfig with a level, a non-zero budget, or includeThoughts
// without a zero budget),
// toolUsePromptTokenCount is [SearchToolUseTokens] and [URLToolUseTokens]
// when the request offers googleSearch and urlContext, and
// totalTokenCount their sum; and a modelVersion.
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
//   - [[implicit-cache:N]] reports N of the prompt's tokens (at most
//     all of them) as read from the API's implicit cache
//     (cachedContentTokenCount), as the API does for a request whose
//     start it saw recently;
//   - [[finish-text:REASON]] streams the usual answer, with finishReason
//     REASON (e.g. MAX_TOKENS) in its last event instead of STOP: an
//     answer cut at the model's output limit;
//   - [[model-version:NAME]] reports NAME as the modelVersion of the
//     answer (by default, every streamed answer reports the model of the
//     request's path);
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
// Requests for the API's built-in tools (googleSearch, urlContext) are
// answered with their grounding and URL context metadata, and requests
// with a responseJsonSchema with JSON, as grounding.go describes; see
// [Server.DenySearch] and [Request.GoogleSearch].
// Requests for code execution (codeExecution, [[code:OUTCOME]]) and for
// thought summaries (includeThoughts) are answered as codeexec.go
// describes.
//
// Gemini 3 models' thought signatures (signed answers, and the 400 for a
// function call sent back without its signature) are described in
// signatures.go; quota errors ([Server.ExhaustQuota]) in quota.go;
// inlineData and fileData parts and the Files API (upload,
// files.get, files.delete) in files.go; explicit context caches (the
// cachedContents API, and requests that use one) in caches.go; the
// Interactions API (background agent and model runs) in interactions.go;
// File Search stores (the fileSearchStores API) in filesearch.go.
//
// [Home] prepares a throwaway home directory in which the CLI talks to a
// Server and to nothing else, and [RealCLI] finds the real CLI for tests
// that need it.
package fakeapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"
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
	// Media are the inlineData and fileData parts of the request's
	// contents (see files.go).
	Media []Media
	// Ended says the client went away before the Server had finished the
	// answer (a [[stall]]ed or [[sleep]]ing stream it cancelled).
	Ended bool
	// Sent is the number of bytes of events written for a hostile stream
	// ([[call-flood]], [[drip]]), 0 for others.
	Sent int64
	// CachedContent is the cache a generate request named ("" for
	// none), and CachedTokens the tokens of it the answer's usage
	// reported as cachedContentTokenCount (see caches.go).
	CachedContent string
	CachedTokens  int
	// Time is when the request arrived.
	Time time.Time

	// Interaction is the id of the interaction an Interactions API request
	// made or named (see interactions.go).
	Interaction string
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
	// noSearch are the models refused googleSearch (DenySearch).
	noSearch map[string]bool
	files    fileStore    // the Files API's (files.go)
	caches   cacheStore   // the cachedContents API's (caches.go)
	quotas   quotaStore   // ExhaustQuota's (quota.go)
	stores   searchStores // the fileSearchStores API's (filesearch.go)

	interactions interactionStore // the Interactions API's (interactions.go)

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

func (s *Server) record(rec Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, rec)
	close(s.changed)
	s.changed = make(chan struct{})
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

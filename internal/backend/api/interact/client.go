// Package interact is a client of the Gemini Interactions API: a model or
// an agent (Deep Research) run as an interaction that Google holds, which
// may run in the background (background: true) and be polled, cancelled
// and deleted by its id.
//
// It speaks the endpoints of the genai SDK's google.golang.org/genai/interactions
// (POST /v1beta/interactions, GET /v1beta/interactions/<id>, POST
// /v1beta/interactions/<id>/cancel, DELETE /v1beta/interactions/<id>, GET
// /v1beta/agents) with the SDK's own types for what it sends (and, for
// what it reads, a lean mirror of them checked against them: see
// result.go), but not through the SDK's client: that client reads an answer whole and
// keeps an error's body whole, retries on its own schedule, and decodes
// an error only in the shape its specification gives (a string code),
// where Google's other APIs answer a numeric one. Here every answer is
// capped before it is decoded ([MaxResponseBytes]), an error in either
// shape becomes a clear message, and what a result holds is bounded
// ([MaxTextBytes], [MaxThoughts], [MaxCitations], [MaxSteps]).
//
// A Client does not retry: a failed poll is retried by polling again, and
// a create sent twice would start two interactions (each billed). It does
// not stream (stream: true and last_event_id): a background interaction
// is polled whole.
//
// A Client is safe for concurrent use. It keeps no state of its own
// between calls: the id of an interaction is all a new Client, in a
// restarted server, needs to go on polling it (see [Client.Get]).
package interact

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"
)

// Bounds on what the API, or whatever answers at its address, may send.
const (
	// MaxResponseBytes bounds one answer (an interaction with all its
	// steps, a page of agents). A Deep Research report is tens of KB; its
	// steps, with their thought summaries, a few hundred KB more.
	MaxResponseBytes = 8 << 20
	// maxErrorBytes bounds the body of an error answer read.
	maxErrorBytes = 64 << 10
	// maxInputBytes bounds the input text sent.
	maxInputBytes = 1 << 20
	// maxAgentPages and maxAgents bound the agents list.
	maxAgentPages = 10
	maxAgents     = 500
)

// DefaultAPIEndpoint is the Gemini API's address.
const DefaultAPIEndpoint = "https://generativelanguage.googleapis.com"

// DefaultAgent is the Deep Research agent to use when neither the caller
// nor the operator names one. Google renames its agents with each
// preview: the name is checked by the create call itself (an agent the key
// cannot use is [ErrAgentUnavailable], naming it), and [Client.Agents]
// lists what the API offers.
const DefaultAgent = "deep-research-preview-04-2026"

// Errors that a caller may act on; errors.Is finds them in the errors of a
// Client's methods.
var (
	// ErrNotFound: the API holds no such interaction (deleted, expired
	// after its retention period, created with store false, or never).
	ErrNotFound = errors.New("interaction not found")
	// ErrAgentUnavailable: the API key may not use the agent, or the API
	// knows no agent of that name.
	ErrAgentUnavailable = errors.New("agent unavailable")
	// ErrRateLimited: 429, a rate limit or an exhausted quota.
	ErrRateLimited = errors.New("rate limited")
	// ErrBadAnswer: the answer was too large or not an interaction.
	ErrBadAnswer = errors.New("bad answer from the Interactions API")
	// ErrTimeout: the API did not answer a call whole within
	// Config.CallTimeout (a passing error: another poll may get past it).
	ErrTimeout = errors.New("the Interactions API did not answer in time")
)

// DefaultCallTimeout bounds one call but a foreground model interaction's
// create (see Config.CallTimeout): the API answers a poll, a cancel or a
// background create in about a second, with an answer of at most
// MaxResponseBytes.
const DefaultCallTimeout = 2 * time.Minute

// slowError is the cause of a call given up at its bound.
type slowError struct{ d time.Duration }

func (e slowError) Error() string {
	return fmt.Sprintf("the Gemini API did not answer within %s (this server's bound on one call)", e.d)
}
func (e slowError) Is(target error) bool { return target == ErrTimeout }

// APIError is an error answer of the API.
type APIError struct {
	Op         string // "create", "get", "cancel", "delete", "agents"
	HTTPStatus int
	Code       string // the google.rpc.Code name, e.g. NOT_FOUND, when given
	Message    string // the API's message, capped
	text       string
	kind       error
}

func (e *APIError) Error() string { return e.text }
func (e *APIError) Unwrap() error { return e.kind }

// Config sets up a Client.
type Config struct {
	// APIKey is the Gemini API key (sent as x-goog-api-key). Vertex AI is
	// not supported here.
	APIKey string
	// BaseURL is the API's address; DefaultAPIEndpoint when empty.
	BaseURL string
	// HTTPClient makes the requests; when nil, one of its own with a
	// bound on answer headers.
	HTTPClient *http.Client
	// CallTimeout bounds each call, the answer read whole, whatever the
	// caller's context (a research job's runs for hours): a peer that
	// never answers, or drips its answer a byte at a time, fails the call
	// rather than holding it. DefaultCallTimeout when zero. A foreground
	// model interaction (StartModel without Background), answered only
	// once the model has finished, is bounded by its context alone.
	CallTimeout time.Duration
}

// Client calls the Interactions API.
type Client struct {
	base    string
	key     string
	hc      *http.Client
	timeout time.Duration
}

// New returns a Client, or an error when the configuration is unusable.
func New(cfg Config) (*Client, error) {
	if cfg.APIKey == "" {
		return nil, errors.New("interactions: no API key (the Interactions API takes a Gemini API key)")
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = DefaultAPIEndpoint
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("interactions: base URL %q is not an http(s) address", cfg.BaseURL)
	}
	var hc http.Client
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
	} else {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxResponseHeaderBytes = 256 << 10
		hc.Transport = t
	}
	// Go's client sends a request's own headers on to wherever a redirect
	// points, the API key with them: the API never redirects, so a
	// redirect is answered as it is (an error) and not followed.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	timeout := cfg.CallTimeout
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	return &Client{base: base + "/v1beta", key: cfg.APIKey, hc: &hc, timeout: timeout}, nil
}

var (
	idRE   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)
	nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
)

func checkID(id string) error {
	if !idRE.MatchString(id) {
		return fmt.Errorf("interactions: %q is not an interaction id (letters, digits, '_' and '-', at most 256)", clip(id, 80))
	}
	return nil
}

// call sends one request and decodes a 200 answer into out (when not
// nil), within the Client's bound on a call; subject names what the call
// is about in its errors (an interaction id, an agent).
func (c *Client) call(ctx context.Context, op, method, path string, body any, out any, subject string) error {
	ctx, cancel := context.WithTimeoutCause(ctx, c.timeout, slowError{c.timeout})
	defer cancel()
	return c.callUnbounded(ctx, op, method, path, body, out, subject)
}

// callUnbounded is call bounded by ctx alone.
func (c *Client) callUnbounded(ctx context.Context, op, method, path string, body any, out any, subject string) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("interactions %s: encoding the request: %w", op, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return fmt.Errorf("interactions %s: %w", op, err)
	}
	req.Header.Set("x-goog-api-key", c.key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interactions %s: %w", op, context.Cause(ctx))
		}
		return fmt.Errorf("interactions %s: the Gemini API could not be reached: %w", op, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(io.LimitReader(res.Body, maxErrorBytes))
		return apiError(op, res.StatusCode, raw, subject)
	}
	raw, err := io.ReadAll(io.LimitReader(res.Body, MaxResponseBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interactions %s: %w", op, context.Cause(ctx))
		}
		return fmt.Errorf("interactions %s: reading the answer: %w", op, err)
	}
	if len(raw) > MaxResponseBytes {
		return fmt.Errorf("interactions %s: %w: the answer is larger than %d bytes", op, ErrBadAnswer, MaxResponseBytes)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("interactions %s: %w: %s", op, ErrBadAnswer, clip(err.Error(), 200))
	}
	return nil
}

// apiError makes the error of a non-200 answer. The API's error body is
// {"error":{"code":…,"message":…,"status":…}}, code being the HTTP status
// as a number (Google's APIs) or the google.rpc.Code name as a string (the
// SDK's interactions.Error): both are read.
func apiError(op string, status int, raw []byte, subject string) *APIError {
	var body struct {
		Error struct {
			Code    json.RawMessage `json:"code"`
			Message string          `json:"message"`
			Status  string          `json:"status"`
		} `json:"error"`
	}
	e := &APIError{Op: op, HTTPStatus: status}
	if json.Unmarshal(raw, &body) == nil {
		e.Message = clip(body.Error.Message, 500)
		var code string
		if json.Unmarshal(body.Error.Code, &code) == nil {
			e.Code = clip(code, 64)
		} else {
			e.Code = clip(body.Error.Status, 64)
		}
	}
	if e.Message == "" {
		e.Message = clip(strings.TrimSpace(string(raw)), 200)
	}
	what := fmt.Sprintf("HTTP %d", status)
	if e.Code != "" {
		what += " " + e.Code
	}
	switch {
	case status == http.StatusNotFound && op != "create" && op != "agents":
		e.kind = ErrNotFound
		e.text = fmt.Sprintf("interaction %s not found at the Gemini API (deleted, past its retention, or created with store false): %s: %s",
			subject, what, e.Message)
	case (status == http.StatusForbidden || status == http.StatusNotFound) && op == "create" && subject != "":
		e.kind = ErrAgentUnavailable
		e.text = fmt.Sprintf("the API key cannot use agent %q (%s: %s); the agents list names those the API offers",
			subject, what, e.Message)
	case status == http.StatusTooManyRequests:
		e.kind = ErrRateLimited
		e.text = fmt.Sprintf("interactions %s: the Gemini API is rate limiting this key or its quota is exhausted (%s): %s",
			op, what, e.Message)
	default:
		e.text = fmt.Sprintf("interactions %s: the Gemini API answered %s: %s", op, what, e.Message)
	}
	return e
}

// clip cuts s to at most n bytes, on a rune boundary, without control
// characters.
func clip(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\n' && r != '\t' || r == 0x7f {
			return -1
		}
		return r
	}, s)
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

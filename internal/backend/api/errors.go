package api

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/redact"
)

func newError(kind backend.Kind, cause error, format string, args ...any) *backend.Error {
	return &backend.Error{Kind: kind, Reason: fmt.Sprintf(format, args...), Err: cause}
}

// asAPIError finds the API's error in err; the SDK returns it by value.
//
// The SDK makes an APIError of an answer whose HTTP status is not 2xx, and
// takes its code from the answer's body when the body is Google's error
// JSON: a body may claim any code, 200 among them, or none. A code that
// is not an error status (400–599) is not believed: the error is taken as
// a bad gateway's (502), which is retried as a failing API is, and its
// message says what code the body claimed.
func asAPIError(err error) (genai.APIError, bool) {
	var v genai.APIError
	if !errors.As(err, &v) {
		var p *genai.APIError
		if !errors.As(err, &p) || p == nil {
			return genai.APIError{}, false
		}
		v = *p
	}
	if v.Code < 400 || v.Code > 599 {
		claimed := fmt.Sprint(v.Code)
		if st := apiWords(v.Status, 64); st != "" {
			claimed += " " + st
		}
		v.Message = fmt.Sprintf("an error whose body claims code %s: %s", claimed, v.Message)
		v.Code, v.Status = http.StatusBadGateway, "BAD_GATEWAY"
	}
	return v, true
}

// retryable says whether a status is worth another try: the API is busy,
// over quota or failing for a moment. 400, 401, 403 and 404 never get
// better by asking again.
func retryable(code int) bool {
	return code == 408 || code == 429 || code >= 500 && code <= 599
}

// retryDelay is the delay the API asks for in its google.rpc.RetryInfo
// detail, if any.
func retryDelay(e genai.APIError) (time.Duration, bool) {
	for _, d := range e.Details {
		t, _ := d["@type"].(string)
		if !strings.HasSuffix(t, "google.rpc.RetryInfo") {
			continue
		}
		s, _ := d["retryDelay"].(string)
		if v, err := time.ParseDuration(s); err == nil && v >= 0 {
			return v, true
		}
	}
	return 0, false
}

// isAuth says whether the API refused the credentials. The Gemini API
// answers a bad key with 400 API_KEY_INVALID rather than 401.
func isAuth(e genai.APIError) bool {
	if e.Code == 401 || e.Code == 403 {
		return true
	}
	if e.Code != 400 {
		return false
	}
	if strings.Contains(e.Message, "API key") || strings.Contains(e.Message, "API_KEY") {
		return true
	}
	for _, d := range e.Details {
		if r, _ := d["reason"].(string); strings.HasPrefix(r, "API_KEY") {
			return true
		}
	}
	return false
}

// maskKey masks the API key in text from the API: an endpoint (a proxy in
// GOOGLE_GEMINI_BASE_URL, say) may echo the x-goog-api-key header it got,
// and the text goes to the client and the log.
func (b *Backend) maskKey(s string) string {
	if len(b.creds.Key) < 4 {
		return s
	}
	return strings.ReplaceAll(s, b.creds.Key, redact.Mask)
}

// maxAPIMessageBytes bounds the API's own words quoted in an error: an
// error answer's message (or, when it is not Google's JSON, its whole
// body, up to the 8 MiB every answer may be) goes to the client and the
// log.
const maxAPIMessageBytes = 2000

// apiWords is s, the API's words, as an error quotes them: without
// control characters (a terminal's escapes), trimmed and clipped to n
// bytes.
func apiWords(s string, n int) string { return msg.Words(s, n) }

// undecodable says whether err is the SDK's failure to decode an answer
// (JSON that is not, a field of the wrong type, bytes that are not
// base64), and returns the decoder's own words: the SDK's error quotes the
// whole answer, up to the cap of one event.
func undecodable(err error) (string, bool) {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var b64 base64.CorruptInputError
	switch {
	case errors.As(err, &syn):
		return apiWords(syn.Error(), 200), true
	case errors.As(err, &typ):
		return apiWords(typ.Error(), 200), true
	case errors.As(err, &b64):
		return "inline data that is not base64: " + b64.Error(), true
	}
	return "", false
}

// apiError turns the API's error into the one the tools show.
func (b *Backend) apiError(ctx context.Context, e genai.APIError, model string) *backend.Error {
	status := apiWords(e.Status, 64)
	if status == "" {
		status = "error"
	}
	// Masked before it is clipped, so that no clip leaves part of the key.
	said := b.maskKey(fmt.Sprintf("%d %s: %s", e.Code, status, apiWords(b.maskKey(e.Message), maxAPIMessageBytes)))
	switch {
	case e.Code == 403 && strings.Contains(e.Message, "permission to access the File"):
		// A file of the Files API that is gone, not the credentials.
		be := newError(backend.KindAPI, e, "the Gemini API no longer has a media file this conversation sent (%s); "+
			"try again, or name the file in files again", said)
		be.Status = e.Code
		return be
	case isAuth(e):
		be := newError(backend.KindAuth, e, "the Gemini API refused the credentials (%s; using %s). %s",
			said, b.creds.What, CredentialsHelp)
		be.Status = e.Code
		return be
	case e.Code == 429:
		wait := "wait a minute and try again"
		if d, ok := retryDelay(e); ok {
			wait = fmt.Sprintf("the API asks to wait %s before retrying", d.Round(time.Millisecond))
		}
		be := newError(backend.KindAPI, e, "the Gemini API's quota or rate limit is exhausted (%s); %s, "+
			"or use a key or project with a higher quota (https://ai.google.dev/gemini-api/docs/rate-limits)", said, wait)
		be.Status = 429
		return be
	case e.Code == 404:
		b.models.forget()
		reason := fmt.Sprintf("the Gemini API does not know model %q (%s)", model, said)
		if _, found, known, _ := b.models.lookup(ctx, model); known && !found {
			reason = b.unknownModel(model).Reason + " (the API said " + said + ")"
		}
		be := newError(backend.KindAPI, e, "%s", reason)
		be.Status = 404
		return be
	case e.Code >= 500:
		be := newError(backend.KindAPI, e, "the Gemini API failed (%s) and kept failing on retry; try again later", said)
		be.Status = e.Code
		return be
	}
	be := newError(backend.KindAPI, e, "the Gemini API refused the request (%s)", said)
	be.Status = e.Code
	return be
}

// unknownModel is the error for a model name the API does not list.
func (b *Backend) unknownModel(model string) *backend.Error {
	if matches := b.models.closeMatches(model); len(matches) > 0 {
		return newError(backend.KindInput, nil, "model %q is not in the Gemini API's model list; did you mean %s?",
			model, strings.Join(matches, ", "))
	}
	return newError(backend.KindInput, nil, "model %q is not in the Gemini API's model list, nor is any like it; "+
		"leave model out for the default (%s)", model, b.defaultName())
}

// contextError is the error for a call whose context ended: parent is
// the caller's context, the call ran under a timeout of limit.
func contextError(parent context.Context, limit time.Duration) *backend.Error {
	if errors.Is(parent.Err(), context.Canceled) {
		return newError(backend.KindCancelled, context.Canceled, "the call was cancelled before Gemini answered")
	}
	if parent.Err() == nil && limit > 0 {
		return newError(backend.KindTimeout, context.DeadlineExceeded,
			"the Gemini API did not answer within %s, the server's limit per call; "+
				"ask for less at once, or raise --timeout (GEMINI_MCP_TIMEOUT)", limit)
	}
	return newError(backend.KindTimeout, context.DeadlineExceeded,
		"the Gemini API did not answer before the caller's deadline")
}

// toolsContextError is the error for a call whose context ended while
// Gemini's tool calls ran: it names the tools still running, which
// contextError would wrongly blame on the Gemini API.
func toolsContextError(parent context.Context, limit time.Duration, unfinished []string) *backend.Error {
	if len(unfinished) == 0 {
		return contextError(parent, limit)
	}
	tools := strings.Join(unfinished, ", ")
	if errors.Is(parent.Err(), context.Canceled) {
		return newError(backend.KindCancelled, context.Canceled, "the call was cancelled while the tool calls %s ran", tools)
	}
	if parent.Err() == nil && limit > 0 {
		return newError(backend.KindTimeout, context.DeadlineExceeded,
			"the tool calls %s had not finished within %s, the server's limit per call (--timeout), and were cancelled; "+
				"raise --timeout (GEMINI_MCP_TIMEOUT) if such calls need longer", tools, limit)
	}
	return newError(backend.KindTimeout, context.DeadlineExceeded,
		"the tool calls %s had not finished before the caller's deadline, and were cancelled", tools)
}

// classify turns any error of a call into the *backend.Error the tools
// show. parent is the caller's context, ctx the call's.
func (b *Backend) classify(parent, ctx context.Context, err error, model string) *backend.Error {
	var be *backend.Error
	if errors.As(err, &be) {
		return be
	}
	if ctx.Err() != nil {
		return contextError(parent, b.timeout)
	}
	if e, ok := asAPIError(err); ok {
		return b.apiError(ctx, e, model)
	}
	return newError(backend.KindFailed, err, "the Gemini API could not be reached (%s); check the network, "+
		"and GOOGLE_GEMINI_BASE_URL if set", apiWords(err.Error(), maxAPIMessageBytes))
}

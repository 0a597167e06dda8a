package fakeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// stream answers with one server-sent event per frame, flushing each.
func (s *Server) stream(w http.ResponseWriter, frames ...[]byte) {
	if sw, ok := w.(*signingWriter); ok {
		frames = sw.sign(frames)
	}
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

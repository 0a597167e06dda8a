package fakeapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

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

package interact

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"google.golang.org/genai/interactions/models/interactions"
)

// researchAnswer is the API's answer about a Deep Research run of 80 KB:
// 40 thought summaries, a 60 KB report with 80 citations, with status.
func researchAnswer(b *testing.B, id string, status Status) []byte {
	steps := []any{}
	for i := range 40 {
		steps = append(steps, map[string]any{"type": "thought",
			"summary": []any{map[string]any{"type": "text", "text": strings.Repeat(fmt.Sprintf("thought %d ", i), 20)}}})
	}
	report := strings.Repeat("A sentence of the report, with a source. ", 1500)
	var anns []any
	for i := range 80 {
		anns = append(anns, map[string]any{"type": "url_citation", "url": fmt.Sprintf("https://example.com/%d", i),
			"title": "a source", "start_index": i * 40, "end_index": i*40 + 40})
	}
	steps = append(steps, map[string]any{"type": "model_output",
		"content": []any{map[string]any{"type": "text", "text": report, "annotations": anns}}})
	raw, err := json.Marshal(map[string]any{"id": id, "status": status, "agent": DefaultAgent, "steps": steps,
		"usage": map[string]any{"total_tokens": 1000}})
	if err != nil {
		b.Fatal(err)
	}
	return raw
}

// BenchmarkDecodePoll is the cost of reading one poll's answer of a
// finished Deep Research run: 40 thought summaries, a 60 KB report with 80
// citations, read into a Result, and for comparison decoded with the SDK's
// types alone.
func BenchmarkDecodePoll(b *testing.B) {
	raw := researchAnswer(b, "run", Completed)
	b.Run("interact", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		for b.Loop() {
			r, err := resultOf(raw)
			if err != nil || len(r.Citations) != 80 {
				b.Fatal(r, err)
			}
		}
	})
	b.Run("sdk-types", func(b *testing.B) {
		b.SetBytes(int64(len(raw)))
		b.ReportAllocs()
		for b.Loop() {
			var in interactions.Interaction
			if err := json.Unmarshal(raw, &in); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPollRunning is one poll by a research job's runner (Get, as
// Wait makes it) of a Deep Research run still in progress with the same
// 80 KB as BenchmarkDecodePoll's, served over 127.0.0.1 by a server that
// writes the stored answer: the request, the answer read whole within
// the call's bound, its id checked and its fields read. Its B/op and
// allocs/op are the client's (the server's run in the same process and
// are counted too, a few KB).
func BenchmarkPollRunning(b *testing.B) {
	raw := researchAnswer(b, "run-1", InProgress)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(raw)
	}))
	b.Cleanup(srv.Close)
	c, err := New(Config{APIKey: "test-key", BaseURL: srv.URL})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := c.Get(ctx, "run-1")
		if err != nil || r.Status != InProgress || len(r.Thoughts) == 0 {
			b.Fatal(r, err)
		}
	}
}

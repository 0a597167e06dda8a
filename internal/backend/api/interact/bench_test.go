package interact

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/genai/interactions/models/interactions"
)

// BenchmarkDecodePoll is the cost of reading one poll's answer of a
// finished Deep Research run: 40 thought summaries, a 60 KB report with 80
// citations, read into a Result, and for comparison decoded with the SDK's
// types alone.
func BenchmarkDecodePoll(b *testing.B) {
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
	raw, _ := json.Marshal(map[string]any{"id": "run", "status": "completed", "agent": DefaultAgent, "steps": steps,
		"usage": map[string]any{"total_tokens": 1000}})
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

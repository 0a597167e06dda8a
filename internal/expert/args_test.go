package expert

import "testing"

// BenchmarkExpertDecode is the decode layer's cost of a thinkdeep call:
// its arguments decoded and checked into ThinkdeepInput.
func BenchmarkExpertDecode(b *testing.B) {
	raw := []byte(`{"current_analysis":"the cache is slow because every call rebuilds it","problem_context":"a server","focus_areas":["performance","design"],"files":["a.go","b.go"],"thinking_mode":"high","temperature":0.5}`)
	b.ReportAllocs()
	for b.Loop() {
		if err := Thinkdeep.decodeArgs(raw, Thinkdeep.input(), 1<<20); err != nil {
			b.Fatal(err)
		}
	}
}

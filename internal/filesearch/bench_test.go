package filesearch

import (
	"testing"
	"time"
)

// BenchmarkIndex20000Files indexes a tree of 20,000 small source files
// into the fake API, then re-indexes it after changing 10 of them, and
// reports the time and the API calls of each (run with -benchtime=1x).
func BenchmarkIndex20000Files(b *testing.B) {
	root := b.TempDir()
	paths := tree(b, root, 20_000)
	for b.Loop() {
		f := newFixture(b)
		ix := f.indexer(nil, Options{})
		start := time.Now()
		rep := f.index(ix, root, "bench")
		first, calls := time.Since(start), len(f.fake.Requests())
		if rep.Uploaded != len(paths) {
			b.Fatalf("first index uploaded %d, want %d", rep.Uploaded, len(paths))
		}
		for _, rel := range paths[:10] {
			write(b, root, rel, "package pkg\n\n// changed at "+time.Now().String()+"\n")
		}
		start = time.Now()
		rep = f.index(ix, root, "bench")
		again, recalls := time.Since(start), len(f.fake.Requests())-calls
		if rep.Uploaded != 10 {
			b.Fatalf("re-index uploaded %d, want 10", rep.Uploaded)
		}
		b.ReportMetric(first.Seconds(), "index-s")
		b.ReportMetric(float64(calls), "index-calls")
		b.ReportMetric(again.Seconds(), "reindex10-s")
		b.ReportMetric(float64(recalls), "reindex10-calls")
		f.fake.Close()
	}
}

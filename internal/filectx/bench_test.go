package filectx

import (
	"fmt"
	"strings"
	"testing"
)

// genTree writes a generated repository of n files: source, docs and logs
// in nested directories, a .gitignore, and a vendored tree that the scan
// must not enter.
func genTree(b *testing.B, n int) string {
	b.Helper()
	files := map[string]string{".gitignore": "*.log\nbuild-output/\n"}
	body := strings.Repeat("func f() int { return 42 } // a line of code\n", 40)
	exts := []string{".go", ".go", ".go", ".py", ".md", ".yaml", ".log", ".txt"}
	for i := range n {
		dir := fmt.Sprintf("pkg%02d/sub%02d", i%25, (i/25)%8)
		files[fmt.Sprintf("%s/file%04d%s", dir, i, exts[i%len(exts)])] = body
	}
	for i := range 200 {
		files[fmt.Sprintf("node_modules/dep%03d/index.js", i)] = body
	}
	return tree(b, files)
}

// BenchmarkScan2000 walks a tree of 2,000 files (250 of them ignored
// logs) and 200 vendored ones.
func BenchmarkScan2000(b *testing.B) {
	root := genTree(b, 2000)
	s, err := NewSandbox(root, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		sc, err := s.ScanEntries(b.Context(), []string{"."}, Options{})
		if err != nil || len(sc.Candidates) != 1751 {
			b.Fatalf("%d candidates, %v", len(sc.Candidates), err)
		}
	}
}

// BenchmarkPack50 reads, renders, counts and packs 50 files of 2 KB.
func BenchmarkPack50(b *testing.B) {
	files := map[string]string{}
	for i := range 50 {
		files[fmt.Sprintf("pkg%d/file%02d.go", i%5, i)] = strings.Repeat("func f() int { return 42 } // a line of code\n", 40)
	}
	root := tree(b, files)
	s, err := NewSandbox(root, nil)
	if err != nil {
		b.Fatal(err)
	}
	sc, err := s.ScanEntries(b.Context(), []string{"."}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		res, err := sc.Pack(b.Context(), nil, Options{})
		if err != nil || len(res.Sent) != 50 {
			b.Fatalf("%d sent, %v", len(res.Sent), err)
		}
	}
}

// BenchmarkGather5000 scans a 5,000-file tree and packs the first 50
// files by priority: the whole of a large analyze call's file work.
func BenchmarkGather5000(b *testing.B) {
	root := genTree(b, 5000)
	b.ReportAllocs()
	for b.Loop() {
		res, err := Gather(b.Context(), root, nil, []string{"."}, nil, Options{})
		if err != nil || len(res.Sent) != 50 {
			b.Fatalf("%v", err)
		}
	}
}

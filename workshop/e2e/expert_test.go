package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestE2EWarmAnalyzeWithFiles: on the warm backend (the real Gemini CLI in
// ACP mode, behind the fake API), analyze sends the project's files with
// line numbers, source before docs, and codereview continues its thread
// without sending the file again.
func TestE2EWarmAnalyzeWithFiles(t *testing.T) {
	h := start(t, "warm")
	for rel, content := range map[string]string{"src/main.go": "package main\n\nfunc main() {}\n", "README.md": "# Demo\n"} {
		p := filepath.Join(h.dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const marker = "e2e-expert-analyze"
	res := h.call(t, 3*time.Minute, "analyze", map[string]any{"question": marker, "files": []string{"README.md", "src"}})
	id, _ := res.Meta["continuationId"].(string)
	if res.IsError || id == "" {
		t.Fatalf("analyze: %s", dump(res))
	}
	p := h.stream(t, marker).LastUserText
	if i, j := strings.Index(p, "BEGIN FILE: src/main.go"), strings.Index(p, "BEGIN FILE: README.md"); i < 0 || j < i ||
		!strings.Contains(p, "   1│ package main\n   2│ \n   3│ func main() {}") {
		t.Fatalf("the prompt Gemini got:\n%s", clip(p, 4000))
	}
	const marker2 = "e2e-expert-review"
	res = h.call(t, 3*time.Minute, "codereview", map[string]any{"context": marker2, "files": []string{"src/main.go"}, "continuation_id": id})
	if res.IsError || res.Meta["continuationId"] != id {
		t.Fatalf("codereview: %s", dump(res))
	}
	r := h.stream(t, marker2)
	if strings.Contains(r.LastUserText, "BEGIN FILE") || !strings.Contains(text(t, res), "- src/main.go: duplicate") {
		t.Errorf("second turn:\n%s\nresult:\n%s", clip(r.LastUserText, 4000), text(t, res))
	}
	if r.NumContents < 3 {
		t.Errorf("the second turn carries %d contents: no history", r.NumContents)
	}
	h.shutdown(t)
}

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// TestJobPartialStdio: over stdio on the API backend, a background chat
// whose answer stalls half-way shows, polled with job, the half that
// streamed as its output so far (in _meta.partial and the text), while
// it is still working; cancelled, it ends cancelled.
func TestJobPartialStdio(t *testing.T) {
	t.Parallel()
	e, fake := apiEnv(t)
	cs := connect(t, e.command("--backend", "api"))

	id := startJob(t, cs, "chat", map[string]any{"prompt": "[[stall]] [[chunks:2]] half an answer"})
	r := waitArrived(t, fake, "half an answer")
	whole := fakeapi.Answer(r.Model, r.NumContents, r.SystemInstruction, r.LastUserText)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a failure guard only
	defer cancel()
	var partial, text string
	err := geminitest.Poll(ctx, "the job's output so far", func() (bool, error) {
		res := callOK(t, cs, "job", map[string]any{"jobId": id})
		if res.Meta["jobStatus"] != "working" {
			t.Fatalf("the stalled job: %s %+v", resultText(res), res.Meta)
		}
		partial, _ = res.Meta["partial"].(string)
		text = resultText(res)
		return partial != "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(partial) >= len(whole) || !strings.HasPrefix(whole, partial) || !strings.HasSuffix(text, "\n\nOutput so far:\n"+partial) {
		t.Errorf("the job shows %q (text %q) of the answer %q, want its first half", partial, text, whole)
	}
	res, err := jobEnd(t, cs, id, map[string]any{"cancel": true})
	if err != nil || res.Meta["jobStatus"] != "cancelled" {
		t.Errorf("the cancelled job: %v %s %+v", err, resultText(res), res.Meta)
	}
}

// TestResearchFilesStdio: research's files and urls reach the agent (the
// fake API's report echoes what it got) beside the query; a .env named
// with them is never sent, and the call's _meta says it was skipped.
func TestResearchFilesStdio(t *testing.T) {
	t.Parallel()
	e, fake := apiEnv(t)
	if err := os.WriteFile(filepath.Join(e.work, "notes.md"), []byte("# Tea\nGreen tea notes for the study.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const secret = "sk-live-a1b2c3d4e5f6a7b8c9d0"
	if err := os.WriteFile(filepath.Join(e.work, ".env"), []byte("OPENAI_API_KEY="+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, e.command("--backend", "api"))

	q := "tea with my notes [[steps:0]]"
	started := callOK(t, cs, "research", map[string]any{"query": q, "files": []string{"notes.md", ".env"},
		"urls": []string{"https://example.com/tea-history"}})
	id, _ := started.Meta["jobId"].(string)
	skipped, _ := started.Meta["filesSkipped"].([]any)
	if id == "" || len(skipped) != 1 || !strings.Contains(normal(t, skipped), `"path":".env","reason":"secret-file`) {
		t.Fatalf("the research's start: %s %+v", resultText(started), started.Meta)
	}
	res, err := jobEnd(t, cs, id, nil)
	if err != nil || res.IsError {
		t.Fatalf("the research: %v %s", err, resultText(res))
	}
	report := resultText(res)
	if !strings.HasPrefix(report, fakeapi.ReportText(q)+"\n\nContext received:\n[text]\n## Files\n") ||
		!strings.Contains(report, "Green tea notes for the study.") || !strings.Contains(report, "https://example.com/tea-history") {
		t.Errorf("the report does not echo the files and URLs:\n%s", report)
	}
	for _, r := range fake.Requests() {
		if strings.Contains(string(r.Body), secret) || strings.Contains(string(r.Body), "OPENAI_API_KEY") {
			t.Errorf("the .env reached the API (%s): %s", r.Method, r.Body)
		}
	}
}

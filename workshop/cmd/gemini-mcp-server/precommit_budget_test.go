package main

import (
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// TestExpertPrecommitCutsChangesToTheModelsInput: staged changes of more
// tokens than the model takes in are cut to fit with the rest of the
// prompt (the tokens counted by the API), not refused by the backend;
// the prompt says where and what was cut, and so does the result.
func TestExpertPrecommitCutsChangesToTheModelsInput(t *testing.T) {
	t.Parallel()
	e := newExpertEnv(t)
	repo := e.repo(t, "small.go", "package app\n")
	// 1,500,000 tokens as the fake API counts them (words), in 3 MB:
	// under the diff's 4 MiB, over the model's 1,048,576 tokens.
	e.write(t, "repo/big.txt", strings.Repeat(strings.Repeat("a ", 50)+"\n", 30000))
	e.write(t, "repo/small.go", "package app\n\nconst later = 1\n")
	git(t, repo, "add", "big.txt", "small.go")
	// No context cache, so that the stream request carries the changes.
	cs := e.stdio(t, "--cache-ttl", "0")
	text, meta := expertOK(t, cs, "precommit", map[string]any{"path": "repo", "original_request": "add the data"})
	streams := e.streams()
	p := streams[len(streams)-1].LastUserText
	if !strings.Contains(p, "[the changes were cut here to fit the model's input") ||
		!strings.Contains(p, "not shown: the rest of the changes to big.txt, and the changes to 1 more files (small.go)") {
		i := max(0, strings.Index(p, "[the changes were cut"))
		t.Errorf("what was sent does not say what was cut:\n%.1500s", p[i:])
	}
	if !strings.Contains(p, "add the data") {
		t.Errorf("the rest of the prompt was not sent")
	}
	if n := fakeapi.CountTokens(p); n > 1048576 {
		t.Errorf("the prompt sent is %d tokens, more than the model's 1048576", n)
	}
	usage, _ := meta["usage"].(map[string]any)
	if n, _ := usage["promptTokens"].(float64); n == 0 || n > 1048576 {
		t.Errorf("the prompt was %v tokens, want at most the model's 1048576", usage)
	}
	cut, _ := meta["changesCut"].(string)
	t.Logf("%s; the prompt: %v tokens", cut, usage["promptTokens"])
	if !strings.Contains(text, "## Changes Not Reviewed\nOnly part of the changes was sent to Gemini") || !strings.Contains(cut, "small.go") {
		t.Errorf("the result does not say what was cut (%q):\n%s", cut, text[max(0, len(text)-1500):])
	}
	if !strings.Contains(text, "## Files Skipped\n- small.go: budget") || !strings.Contains(text, "- big.txt (staged, added; cut: only the first part of its changes was sent)") {
		t.Errorf("the files' notes:\n%s", text[max(0, len(text)-1500):])
	}
}

//go:build unix

package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExpertPrecommitRefusesAnotherUsersRepository: a repository another
// user owns, which git itself refuses ("dubious ownership"), is refused
// (-32001) before anything reaches Gemini, and read once the operator
// allows it, by flag or by variable.
func TestExpertPrecommitRefusesAnotherUsersRepository(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("giving a repository to another user needs root")
	}
	e := newExpertEnv(t)
	repo := e.repo(t)
	e.write(t, "repo/app.go", "package app\n\nconst owner = \"nobody\"\n")
	const nobody = 65534
	if err := filepath.WalkDir(repo, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, nobody, nobody)
	}); err != nil {
		t.Fatal(err)
	}
	_, err := callExpert(t, e.stdio(t), "precommit", map[string]any{"path": "repo"})
	we := wireError(t, err)
	if we.Code != -32001 || !strings.Contains(we.Message, "owned by user id 65534") || !strings.Contains(we.Message, "--precommit-any-owner") {
		t.Errorf("code %d: %s", we.Code, we.Message)
	}
	if n := len(e.streams()); n != 0 {
		t.Fatalf("%d turns reached the API", n)
	}
	text, _ := expertOK(t, e.stdio(t, "--precommit-any-owner"), "precommit", map[string]any{"path": "repo"})
	if !strings.Contains(text, "- app.go") {
		t.Errorf("with --precommit-any-owner: %s", text)
	}
	e.vars = append(e.vars, "GEMINI_MCP_PRECOMMIT_ANY_OWNER=true")
	text, _ = expertOK(t, e.stdio(t), "precommit", map[string]any{"path": "repo"})
	if !strings.Contains(text, "- app.go") {
		t.Errorf("with GEMINI_MCP_PRECOMMIT_ANY_OWNER: %s", text)
	}
	if p := e.streams()[0].LastUserText; !strings.Contains(p, `const owner = \"nobody\"`) && !strings.Contains(p, `const owner = "nobody"`) {
		t.Errorf("the prompt lacks the change:\n%s", p)
	}
}

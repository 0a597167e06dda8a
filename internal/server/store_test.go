package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnsavedSessionIsSaid checks a state directory that cannot be written
// (here its sessions directory has become a file, which stops root too):
// the answer, already paid for, is returned, with a note that the session
// was not saved and how to continue it anyway.
func TestUnsavedSessionIsSaid(t *testing.T) {
	h := newHarness(t)
	sessions := filepath.Join(h.stateDir, "sessions")
	if err := os.RemoveAll(sessions); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sessions, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	texts, isErr := h.textsOnly("chat", map[string]any{"prompt": "remember 42"})
	if isErr || len(texts) != 2 || !strings.HasPrefix(texts[0], "fake-gemini turn=1 ") {
		t.Fatalf("chat: %q", texts)
	}
	_, meta, _ := h.callMetaAll("chat", map[string]any{"prompt": "again"})
	id, _ := meta["sessionId"].(string)
	if meta["sessionSaved"] != false || id == "" {
		t.Fatalf("meta %v", meta)
	}
	note := texts[1]
	if !strings.Contains(note, "could not be saved") || !strings.Contains(note, "--state-dir") || !strings.Contains(note, "cwd "+h.home) {
		t.Fatalf("note %q", note)
	}
	// What the note says works.
	texts, isErr = h.textsOnly("chat-reply", map[string]any{"prompt": "continue", "sessionId": id, "cwd": h.home})
	if isErr || !strings.HasPrefix(texts[0], "fake-gemini turn=2 ") {
		t.Fatalf("continuing as the note says: %q", texts)
	}
}

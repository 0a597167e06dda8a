package server

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// touchFails is a session store that cannot record a turn (its disk is
// full), and works otherwise.
type touchFails struct{ session.Store }

func (touchFails) Touch(context.Context, string, session.Turn, time.Time) (session.Record, error) {
	return session.Record{}, fmt.Errorf("writing the record: no space left on device: %w", session.ErrUnavailable)
}

// TestUnsavedSessionIsSaid checks a session store that cannot record a
// turn: the answer, already paid for, is returned, with a note that the
// session was not saved and how to continue it anyway.
func TestUnsavedSessionIsSaid(t *testing.T) {
	t.Parallel()
	h := newHarness(t, options{noConnect: true})
	mem := memstore.New(session.Options{})
	t.Cleanup(func() { mem.Close() })
	h.store = touchFails{mem}
	h.connect()
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

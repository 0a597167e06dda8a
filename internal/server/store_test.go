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

// storeDown is a session store that answers nothing (it could not be
// opened, or its Redis is away).
type storeDown struct{ session.Store }

var errStoreDown = fmt.Errorf("session store /x/sessions.db: %w: disk I/O error", session.ErrUnavailable)

func (storeDown) Get(context.Context, string) (session.Record, bool, error) {
	return session.Record{}, false, errStoreDown
}

func (storeDown) Touch(context.Context, string, session.Turn, time.Time) (session.Record, error) {
	return session.Record{}, errStoreDown
}

func (storeDown) PutAnswer(context.Context, session.PagedAnswer) error { return errStoreDown }

// TestStoreDownNoteIsTrue: with a store that answers nothing, a chat's
// answer comes with a note that its session was NOT saved and cannot be
// continued now, in place of the note that names its sessionId for
// chat-reply (a model that sees only the text must not be told to pass
// it); and chat-reply, as the note says, fails. A long answer's first
// page says its other pages could not be kept, and points at that note,
// not at a chat-reply that cannot run now.
func TestStoreDownNoteIsTrue(t *testing.T) {
	t.Parallel()
	h := newHarness(t, options{noConnect: true, sessionIDInText: true, maxAnswerBytes: 1000})
	mem := memstore.New(session.Options{})
	t.Cleanup(func() { mem.Close() })
	h.store = storeDown{mem}
	h.connect()
	texts, meta, isErr := h.callMetaAll("chat", map[string]any{"prompt": "remember 42"})
	id, _ := meta["sessionId"].(string)
	if isErr || len(texts) != 2 || !strings.HasPrefix(texts[0], "fake-gemini turn=1 ") || meta["sessionSaved"] != false || id == "" {
		t.Fatalf("chat: %q, meta %v", texts, meta)
	}
	note := texts[1]
	if !strings.Contains(note, "this turn was NOT saved: the session store is unavailable") || !strings.Contains(note, "chat-reply cannot continue session "+id+" now") ||
		!strings.Contains(note, "once the store is back") || strings.Contains(note, "pass it to chat-reply") || strings.Contains(note, "To continue it, pass") {
		t.Fatalf("note %q", note)
	}
	texts, isErr = h.textsOnly("chat-reply", map[string]any{"prompt": "continue", "sessionId": id, "cwd": h.home})
	if !isErr || !strings.Contains(texts[0], "the session store is unavailable") {
		t.Fatalf("chat-reply with the store down: %q", texts)
	}
	texts, isErr = h.textsOnly("chat", map[string]any{"prompt": "[[stdout:2500]] long"})
	if isErr || len(texts) != 2 || !strings.Contains(texts[0], "its other pages could not be kept") ||
		!strings.Contains(texts[0], "ask with chat-reply for the part after this one, once the session can be continued (see the note below)") ||
		strings.Contains(texts[0], "nothing was sent to Gemini") || !strings.Contains(texts[1], "this turn was NOT saved") {
		t.Fatalf("a long answer with the store down: %q", texts)
	}
}

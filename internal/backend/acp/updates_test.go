package acp

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
)

// textObs records what a prompt's observer hears.
type textObs struct {
	mu         sync.Mutex
	texts, act []string
}

func (o *textObs) Queued(int) {}
func (o *textObs) Started()   {}
func (o *textObs) Activity(msg string) {
	o.mu.Lock()
	o.act = append(o.act, msg)
	o.mu.Unlock()
}
func (o *textObs) AnswerSoFar(text string) {
	o.mu.Lock()
	o.texts = append(o.texts, text)
	o.mu.Unlock()
}

// TestAnswerSoFar: each agent_message_chunk of a running prompt tells an
// observer that hears the answer's text the whole text so far; an
// update of another session, or one past the output cap, tells it
// nothing.
func TestAnswerSoFar(t *testing.T) {
	a := newAgent(false, 10, slog.New(slog.DiscardHandler))
	obs := &textObs{}
	a.subs["s1"] = &promptSub{obs: obs, tooBig: make(chan struct{})}
	chunk := func(session, text string) {
		a.notification(rpcMessage{Method: "session/update", Params: []byte(fmt.Sprintf(
			`{"sessionId":%q,"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":%q}}}`, session, text))})
	}
	chunk("s1", "Hello")
	chunk("s2", "other")
	chunk("s1", ", you")
	chunk("s1", " and more than the cap")
	if want := []string{"Hello", "Hello, you"}; !slices.Equal(obs.texts, want) {
		t.Errorf("the observer heard %q, want %q", obs.texts, want)
	}
	if len(obs.act) != 2 {
		t.Errorf("activity %q", obs.act)
	}
}

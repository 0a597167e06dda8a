package filectx

import (
	"context"
	"sync"
)

// SentFiles remembers which files each conversation was sent, so that a
// continued conversation is not sent them again (the expert tools' file
// deduplication). MemorySent keeps them in this process.
type SentFiles interface {
	Sent(ctx context.Context, sessionID string) (Seen, error)
	Add(ctx context.Context, sessionID string, files []FileNote) error
}

// MemorySent is a SentFiles kept in this process: a restarted server, or
// another replica, sends the files again, which costs tokens but loses
// nothing. It keeps the files of at most Max conversations (0 means
// DefaultMaxSentSessions), forgetting the least recently used first.
type MemorySent struct {
	Max int

	mu    sync.Mutex
	sets  map[string]Seen
	order []string // least recently used first
}

// DefaultMaxSentSessions bounds MemorySent.
const DefaultMaxSentSessions = 10000

// Sent returns a copy of the files session id was sent.
func (m *MemorySent) Sent(_ context.Context, id string) (Seen, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := Seen{}
	for p, h := range m.sets[id] {
		out[p] = h
	}
	if _, ok := m.sets[id]; ok {
		m.touch(id)
	}
	return out, nil
}

// Add records that session id was sent files.
func (m *MemorySent) Add(_ context.Context, id string, files []FileNote) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sets == nil {
		m.sets = map[string]Seen{}
	}
	set, ok := m.sets[id]
	if !ok {
		set = Seen{}
		m.sets[id] = set
	}
	for _, f := range files {
		set[f.Path] = f.Hash
	}
	m.touch(id)
	max := m.Max
	if max <= 0 {
		max = DefaultMaxSentSessions
	}
	for len(m.order) > max {
		delete(m.sets, m.order[0])
		m.order = m.order[1:]
	}
	return nil
}

// touch moves id to the most recently used end.
func (m *MemorySent) touch(id string) {
	for i, x := range m.order {
		if x == id {
			m.order = append(m.order[:i], m.order[i+1:]...)
			break
		}
	}
	m.order = append(m.order, id)
}

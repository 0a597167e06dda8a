package geminitest

import (
	"bytes"
	"context"
	"sync"
)

// LockedBuffer is a bytes.Buffer safe for concurrent use: a process's
// stderr written by os/exec while a test reads it.
type LockedBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	written chan struct{} // closed on the next write, when someone waits
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.written != nil {
		close(b.written)
		b.written = nil
	}
	return b.buf.Write(p)
}

func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// WaitFor waits until the buffer holds s, woken by each write, and
// reports false if ctx ends first.
func (b *LockedBuffer) WaitFor(ctx context.Context, s string) bool {
	for {
		b.mu.Lock()
		if bytes.Contains(b.buf.Bytes(), []byte(s)) {
			b.mu.Unlock()
			return true
		}
		if b.written == nil {
			b.written = make(chan struct{})
		}
		w := b.written
		b.mu.Unlock()
		select {
		case <-w:
		case <-ctx.Done():
			return false
		}
	}
}

package proc

import "sync"

// CappedBuffer keeps at most max bytes and remembers that more arrived. It
// never fails a write, so the copy from the child's pipe keeps draining it;
// the first write past the cap calls onOverflow once.
type CappedBuffer struct {
	mu         sync.Mutex
	buf        []byte
	max        int
	overflow   bool
	onOverflow func()
}

// NewCappedBuffer returns a buffer that keeps max bytes and calls
// onOverflow (which may be nil) at the first write past them.
func NewCappedBuffer(max int, onOverflow func()) *CappedBuffer {
	return &CappedBuffer{max: max, onOverflow: onOverflow}
}

func (b *CappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	room := b.max - len(b.buf)
	if room >= len(p) {
		b.buf = append(b.buf, p...)
		b.mu.Unlock()
		return len(p), nil
	}
	if room > 0 {
		b.buf = append(b.buf, p[:room]...)
	}
	first := !b.overflow
	b.overflow = true
	f := b.onOverflow
	b.mu.Unlock()
	if first && f != nil {
		f()
	}
	return len(p), nil
}

// Bytes returns what was kept.
func (b *CappedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf
}

// Overflowed reports whether more than max bytes arrived.
func (b *CappedBuffer) Overflowed() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.overflow
}

// TailBuffer keeps the last max bytes written to it: the end of stderr is
// where the CLI puts its JSON error object.
type TailBuffer struct {
	mu    sync.Mutex
	buf   []byte
	max   int
	total int64
}

// NewTailBuffer returns a buffer that keeps the last max bytes.
func NewTailBuffer(max int) *TailBuffer { return &TailBuffer{max: max} }

func (b *TailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total += int64(len(p))
	if len(p) >= b.max {
		b.buf = append(b.buf[:0], p[len(p)-b.max:]...)
		return len(p), nil
	}
	if over := len(b.buf) + len(p) - b.max; over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// String returns the kept tail.
func (b *TailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

package server

import (
	"container/list"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// DefaultMaxConns returns the default cap on the connections the server
// holds: three quarters of its open-file limit, so that the rest is left
// to its own files (the session store, the CLIs' pipes, Redis) and an
// accept never fails for lack of a file, or 0 (no cap) where the limit is
// unknown.
func DefaultMaxConns() int {
	n := fileLimit()
	if n <= 0 {
		return 0
	}
	limit := n * 3 / 4
	if n-limit < 64 {
		limit = max(n-64, n/2, 1)
	}
	return limit
}

// connLimiter is a listener that bounds the connections it hands out: per
// client address (perIP) and in all (max). A connection past its
// address's cap is closed at once, unanswered. At the total cap, a new
// connection takes the place of the one that has waited longest without a
// request in progress (one still sending its first request's headers, or
// an idle keep-alive one), so that connections opened and left hanging
// cannot lock out everybody else; only when every connection is serving a
// request is the new one closed. Its ConnState hook (track) tells it which
// connections wait.
type connLimiter struct {
	net.Listener
	max, perIP int
	log        *slog.Logger

	mu      sync.Mutex
	total   int
	byIP    map[string]int
	waiting list.List // of *limitedConn, longest waiting first
	// Refusals are logged at most once per refusalLogEvery, with how many
	// there were since, so that a flood does not flood the log too.
	lastLog  time.Time
	refusals int
}

const refusalLogEvery = 10 * time.Second

func newConnLimiter(ln net.Listener, max, perIP int, log *slog.Logger) *connLimiter {
	return &connLimiter{Listener: ln, max: max, perIP: perIP, log: log, byIP: map[string]int{}}
}

// limitedConn counts in its limiter until closed.
type limitedConn struct {
	net.Conn
	l      *connLimiter
	key    string
	elem   *list.Element // in l.waiting, or nil; under l.mu
	closed bool          // under l.mu
}

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key := addrKey(c.RemoteAddr())
		l.mu.Lock()
		if l.perIP > 0 && l.byIP[key] >= l.perIP {
			l.refusedLocked("refused connections from an address that holds --max-conns-per-ip connections", key)
			l.mu.Unlock()
			c.Close()
			continue
		}
		var evicted *limitedConn
		if l.max > 0 && l.total >= l.max {
			front := l.waiting.Front()
			if front == nil {
				l.refusedLocked("refused connections: the server holds --max-conns connections, all serving requests", key)
				l.mu.Unlock()
				c.Close()
				continue
			}
			evicted = front.Value.(*limitedConn)
			l.releaseLocked(evicted)
			l.refusedLocked("closed waiting connections to make room for new ones: the server holds --max-conns connections", evicted.key)
		}
		lc := &limitedConn{Conn: c, l: l, key: key}
		l.total++
		l.byIP[key]++
		lc.elem = l.waiting.PushBack(lc)
		l.mu.Unlock()
		if evicted != nil {
			evicted.Conn.Close()
		}
		return lc, nil
	}
}

// track is the http.Server's ConnState hook: a connection waits while it
// has no request in progress.
func (l *connLimiter) track(c net.Conn, s http.ConnState) {
	lc, ok := c.(*limitedConn)
	if !ok {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if lc.closed {
		return
	}
	switch s {
	case http.StateNew, http.StateIdle:
		if lc.elem == nil {
			lc.elem = l.waiting.PushBack(lc)
		}
	default:
		if lc.elem != nil {
			l.waiting.Remove(lc.elem)
			lc.elem = nil
		}
	}
}

func (c *limitedConn) Close() error {
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

func (l *connLimiter) releaseLocked(c *limitedConn) {
	if c.closed {
		return
	}
	c.closed = true
	if c.elem != nil {
		l.waiting.Remove(c.elem)
		c.elem = nil
	}
	l.total--
	if l.byIP[c.key]--; l.byIP[c.key] <= 0 {
		delete(l.byIP, c.key)
	}
}

func (l *connLimiter) refusedLocked(msg, key string) {
	l.refusals++
	if now := time.Now(); now.Sub(l.lastLog) >= refusalLogEvery {
		l.log.Warn(msg, "remote", key, "count", l.refusals, "maxConns", l.max, "maxConnsPerIP", l.perIP)
		l.lastLog, l.refusals = now, 0
	}
}

// addrKey is the client address a connection counts against: its IPv4
// address, or its IPv6 /64 network, which one client commonly holds whole.
func addrKey(a net.Addr) string {
	tcp, ok := a.(*net.TCPAddr)
	if !ok {
		return a.String()
	}
	if v4 := tcp.IP.To4(); v4 != nil {
		return v4.String()
	}
	return (&net.IPNet{IP: tcp.IP.Mask(net.CIDRMask(64, 128)), Mask: net.CIDRMask(64, 128)}).String()
}

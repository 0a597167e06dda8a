package server

import (
	"net"
	"net/http"
	"sync"
)

// freshConns closes, at shutdown, the connections that never carried a
// request. http.Server.Shutdown counts such a connection as busy for its
// first 5 seconds (in case a request is on its way), so a single one held
// the whole shutdown for 5 s. HTTP clients open them routinely: Go's
// transport, for one, dials a spare connection when a request waits and
// keeps it idle if another connection frees up first. Closing them is what
// Shutdown does to idle keep-alive connections; a request that was in
// flight on one sees the connection close before any answer, which clients
// retry, and the server is stopping anyway.
type freshConns struct {
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	closing bool
}

func (f *freshConns) track(c net.Conn, s http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s != http.StateNew {
		delete(f.conns, c)
		return
	}
	if f.closing {
		c.Close()
		return
	}
	if f.conns == nil {
		f.conns = map[net.Conn]struct{}{}
	}
	f.conns[c] = struct{}{}
}

func (f *freshConns) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closing = true
	for c := range f.conns {
		c.Close()
	}
	clear(f.conns)
}

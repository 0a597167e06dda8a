package server

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// dialFrom connects to ln from the loopback address from (Linux routes
// all of 127.0.0.0/8 to lo; elsewhere only 127.0.0.1 may work).
func dialFrom(t *testing.T, ln net.Listener, from string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c, err := d.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Skipf("dial from %s: %v", from, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedByServer waits for c to be closed by the other end; the deadline
// is a failure guard only.
func closedByServer(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%s: not closed by the server: %v", c.LocalAddr(), err)
	}
}

// TestConnLimiter: at the total cap a new connection replaces the one
// waiting longest; when none waits, it is closed; past an address's cap a
// new connection from it is closed; a closed connection frees its place.
func TestConnLimiter(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	l := newConnLimiter(ln, 2, 2, slog.New(slog.DiscardHandler))
	accepted := make(chan net.Conn)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	accept := func(c net.Conn) net.Conn {
		t.Helper()
		s := <-accepted
		if s.RemoteAddr().String() != c.LocalAddr().String() {
			t.Fatalf("accepted %s, want %s", s.RemoteAddr(), c.LocalAddr())
		}
		return s
	}
	c1 := dialFrom(t, ln, "127.0.0.2")
	s1 := accept(c1)
	l.track(s1, http.StateActive)
	c2 := dialFrom(t, ln, "127.0.0.3")
	s2 := accept(c2)
	l.track(s2, http.StateNew)
	// At the cap: the waiting c2 makes room for c3.
	c3 := dialFrom(t, ln, "127.0.0.2")
	s3 := accept(c3)
	closedByServer(t, c2)
	l.track(s3, http.StateActive)
	// All serve requests: c4 is closed, and c5 is the next accepted
	// once c1 ends.
	c4 := dialFrom(t, ln, "127.0.0.4")
	closedByServer(t, c4)
	s1.Close()
	s1.Close() // closing twice frees one place
	c5 := dialFrom(t, ln, "127.0.0.4")
	s5 := accept(c5)
	// 127.0.0.2 holds c3; with c5 the total cap is reached again.
	l.track(s5, http.StateIdle)
	c6 := dialFrom(t, ln, "127.0.0.2")
	s6 := accept(c6)
	closedByServer(t, c5) // the idle one made room
	// The address cap: 127.0.0.2 holds c3 and c6.
	l.track(s6, http.StateActive)
	c7 := dialFrom(t, ln, "127.0.0.2")
	closedByServer(t, c7)
	s3.Close()
	s6.Close()
	l.mu.Lock()
	total, ips, waiting := l.total, len(l.byIP), l.waiting.Len()
	l.mu.Unlock()
	if total != 0 || ips != 0 || waiting != 0 {
		t.Fatalf("after every connection closed: total %d, addresses %d, waiting %d", total, ips, waiting)
	}
	ln.Close()
	if _, ok := <-accepted; ok {
		t.Fatal("accepted after the listener closed")
	}
}

func TestAddrKey(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]string{
		"127.0.0.1:80":               "127.0.0.1",
		"[::ffff:10.0.0.1]:80":       "10.0.0.1",
		"[2001:db8:1:2:3:4:5:6]:443": "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::1]:443": "2001:db8:1:2::/64",
		"[2001:db8:1:3::1]:443":      "2001:db8:1:3::/64",
	} {
		a, err := net.ResolveTCPAddr("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if got := addrKey(a); got != want {
			t.Errorf("%s: %s, want %s", addr, got, want)
		}
	}
}

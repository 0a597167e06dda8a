package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// pipeListener hands out in-memory connections, so that a test in a
// synctest bubble can serve HTTP on fake time.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// dial returns the client end of a connection the server has accepted.
func (l *pipeListener) dial() net.Conn {
	client, server := net.Pipe()
	l.conns <- server
	return client
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// TestShutdownClosesUnusedConnections opens a connection that never sends
// a request, as HTTP clients' spare connections do, then stops the server:
// shutdown must not wait for it (http.Server.Shutdown alone gives such a
// connection 5 s, which made shutdowns take 5 s).
func TestShutdownClosesUnusedConnections(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ln := newPipeListener()
		ctx, stop := context.WithCancel(t.Context())
		errc := make(chan error, 1)
		go func() {
			errc <- ServeHTTP(ctx, ln, http.NotFoundHandler(), ServeOptions{Grace: time.Minute, Log: slog.New(slog.DiscardHandler)})
		}()
		c := ln.dial()
		defer c.Close()
		synctest.Wait()
		start := time.Now()
		stop()
		if err := <-errc; err != nil {
			t.Fatalf("ServeHTTP: %v", err)
		}
		if d := time.Since(start); d >= time.Second {
			t.Fatalf("shutdown waited %v for a connection that never sent a request", d)
		}
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Fatalf("the unused connection was not closed: %v", err)
		}
	})
}

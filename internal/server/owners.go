package server

import (
	"bytes"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/identity"
)

// callerOf is the one place that says who an HTTP request comes from (see
// identity.Of): its bearer token's id when the server has tokens, else
// the address of the connection. A proxy's X-Forwarded-For is not
// trusted: behind a reverse proxy, every client without a token is the
// proxy.
func callerOf(r *http.Request, tokens bool) string {
	if tokens {
		return identity.ForToken(clientID(r))
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return identity.ForAddr(host)
}

// sessionOwners binds each MCP session to the caller that opened it: a
// Streamable HTTP session (Mcp-Session-Id) to the caller of its
// initialize, an SSE session (/sse?sessionid=) to the caller of its GET.
// Any request that names a session of another caller, or one unknown
// here, is answered 404, as for a session that does not exist: it is not
// this caller's, and a client that gets 404 opens a new session. So
// another token can neither answer the questions put to a session's user
// (elicitation results are POSTed on the session), nor make requests on
// it, read its stream or end it.
type sessionOwners struct {
	srv        *mcp.Server
	log        *slog.Logger
	mu         sync.Mutex
	streamable map[string]string // Mcp-Session-Id → caller
	sse        map[string]string // sessionid → caller, while its GET lasts
	// binding, when set (by tests), runs as a session is bound, between
	// finding it among the live sessions and recording its owner.
	binding func(id string)
}

// sessionGuards are what stateful sessions pass on top of the guard: the
// check of their owner, then the caps on their number.
func sessionGuards(srv *mcp.Server, o HTTPOptions) func(http.Handler) http.Handler {
	owners := &sessionOwners{srv: srv, log: o.Log, streamable: map[string]string{}, sse: map[string]string{}}
	sessionCap := newSessionCap(srv, o)
	return func(h http.Handler) http.Handler { return owners.wrap(sessionCap.wrap(h)) }
}

func (o *sessionOwners) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		caller := identity.Of(r.Context())
		switch {
		case r.URL.Path == PathMCP && r.Header.Get("Mcp-Session-Id") != "":
			if !o.owns(o.streamable, r.Header.Get("Mcp-Session-Id"), caller) {
				o.refuse(w, r, caller)
				return
			}
		case r.URL.Path == PathMCP && r.Method == http.MethodPost:
			// It may open a session: its id is bound before the
			// client can read it.
			w = &bindOnHeader{ResponseWriter: w, bind: func(id string) { o.bindStreamable(id, caller) }}
		case r.URL.Path == PathSSE && r.Method == http.MethodGet:
			sw := &bindOnEndpoint{ResponseWriter: w, bind: func(id string) { o.bindSSE(id, caller) }}
			defer sw.unbind(o)
			w = sw
		case r.URL.Path == PathSSE && r.URL.Query().Get("sessionid") != "":
			if !o.owns(o.sse, r.URL.Query().Get("sessionid"), caller) {
				o.refuse(w, r, caller)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (o *sessionOwners) owns(m map[string]string, id, caller string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	owner, ok := m[id]
	return ok && owner == caller
}

func (o *sessionOwners) refuse(w http.ResponseWriter, r *http.Request, caller string) {
	o.log.Warn("refused a request on an MCP session that is unknown or another client's", "caller", caller,
		"remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path)
	http.Error(w, "session not found", http.StatusNotFound)
}

// bindStreamable records a new Streamable HTTP session's owner until the
// session ends (DELETE, idle timeout, shutdown): each owner is forgotten
// when its own session closes, never by a look at the live sessions that
// another request's bind may have overtaken. The session is connected
// when its initialize is answered; one already gone by then gets no owner,
// and every request naming it is answered 404.
func (o *sessionOwners) bindStreamable(id, caller string) {
	var ss *mcp.ServerSession
	for s := range o.srv.Sessions() {
		if s.ID() == id {
			ss = s
			break
		}
	}
	if ss == nil {
		return
	}
	if o.binding != nil {
		o.binding(id)
	}
	o.mu.Lock()
	o.streamable[id] = caller
	o.mu.Unlock()
	go func() {
		ss.Wait()
		o.mu.Lock()
		defer o.mu.Unlock()
		delete(o.streamable, id)
	}()
}

func (o *sessionOwners) bindSSE(id, caller string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sse[id] = caller
}

// bindOnHeader binds the session whose id the response carries, before
// its header goes out.
type bindOnHeader struct {
	http.ResponseWriter
	bind  func(id string)
	wrote bool
}

func (b *bindOnHeader) WriteHeader(code int) {
	if !b.wrote {
		b.wrote = true
		if id := b.Header().Get("Mcp-Session-Id"); id != "" {
			b.bind(id)
		}
	}
	b.ResponseWriter.WriteHeader(code)
}

func (b *bindOnHeader) Write(p []byte) (int, error) {
	if !b.wrote {
		b.WriteHeader(http.StatusOK)
	}
	return b.ResponseWriter.Write(p)
}

func (b *bindOnHeader) Flush() {
	if !b.wrote {
		b.WriteHeader(http.StatusOK)
	}
	http.NewResponseController(b.ResponseWriter).Flush()
}

func (b *bindOnHeader) Unwrap() http.ResponseWriter { return b.ResponseWriter }

// bindOnEndpoint binds an SSE session when its stream tells the client
// its endpoint (event "endpoint", data "/sse?sessionid=…", the stream's
// first write), before the client can read it.
type bindOnEndpoint struct {
	http.ResponseWriter
	bind func(id string)
	id   string
	seen bool
}

func (b *bindOnEndpoint) Write(p []byte) (int, error) {
	if !b.seen {
		b.seen = true
		for line := range bytes.Lines(p) {
			data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data: "))
			if !ok {
				continue
			}
			if u, err := url.Parse(string(data)); err == nil && u.Query().Get("sessionid") != "" {
				b.id = u.Query().Get("sessionid")
				b.bind(b.id)
			}
			break
		}
	}
	return b.ResponseWriter.Write(p)
}

func (b *bindOnEndpoint) Flush() { http.NewResponseController(b.ResponseWriter).Flush() }

func (b *bindOnEndpoint) Unwrap() http.ResponseWriter { return b.ResponseWriter }

// unbind forgets the session once its stream is over.
func (b *bindOnEndpoint) unbind(o *sessionOwners) {
	if b.id == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.sse, b.id)
}

package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/identity"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// HTTPOptions configures the HTTP transports.
type HTTPOptions struct {
	Version string
	// Tokens are the accepted bearer tokens; none means no auth, which is
	// allowed only on loopback addresses unless AllowInsecureRemote.
	Tokens []string
	// OAuth, when set, accepts the access tokens of authorization
	// servers too (a static token is checked first).
	OAuth *OAuthOptions
	// AllowedOrigins are browser origins (scheme://host[:port]) allowed
	// besides loopback ones.
	AllowedOrigins []string
	// Stateless serves Streamable HTTP without sessions, for replicas
	// behind a load balancer; the SSE transport, which needs a session per
	// stream, is then off.
	Stateless    bool
	MaxBodyBytes int64
	// MaxPromptBytes is --max-prompt-bytes: a tool call's argument over it
	// is refused from its size in the body, without being decoded (see
	// shrinkOversized); 0 leaves it to the tools.
	MaxPromptBytes int
	// MaxSessions and MaxSessionsPerToken cap the open sessions (not in
	// stateless mode); 0 means config.DefaultMaxSessions and
	// config.DefaultMaxSessionsPerToken.
	MaxSessions, MaxSessionsPerToken int
	// BodyReadTimeout bounds the time to read a request's body once its
	// headers are in and accepted; 0 means config.DefaultBodyReadTimeout.
	BodyReadTimeout time.Duration
	// SessionIdleTimeout closes sessions that sent no request for this
	// long, so that clients that vanish without ending their session do
	// not leave it behind; 0 means DefaultSessionIdleTimeout.
	SessionIdleTimeout time.Duration
	// Requests, when set, records each /mcp request's context so that a
	// call ends when its HTTP request does (see RequestContexts).
	Requests *RequestContexts
	// Inflight, when set, counts the calls and requests that shutdown
	// waits for (see ServeHTTP).
	Inflight *Inflight
	// Metrics, when set, is served at /metrics behind the same checks as
	// /mcp (origin, bearer token).
	Metrics http.Handler
	// Drain, when set, is what /readyz and the refusals of new sessions
	// and calls follow while ServeHTTP stops (see ServeOptions.Drain).
	Drain *Drain
	// Ready, when set, says whether the server can take calls (its store
	// answers, its backend is usable): /readyz answers 503 with its error.
	// It gets a context of a few seconds.
	Ready func(context.Context) error
	Log   *slog.Logger
}

// RequestContexts ties tool calls to the HTTP requests that carry them. A
// Streamable HTTP call's answer goes back on its own POST, so when that
// POST is gone (the client dropped it, or went away) no one can receive
// the answer and the call should stop. The SDK does this itself only for
// clients of protocol 2026-07-28 or later, and a stateless server never
// sees a cancellation notification, which arrives on a POST of its own.
// The middleware stamps each request with an id in a header (replacing any
// the client sent) and the tool handler looks its context up by that id.
type RequestContexts struct{ m sync.Map }

// endedRequest stands for a request that is over.
var endedRequest = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()

// headerRequestID carries the id from the middleware to the handler.
const headerRequestID = "X-Gemini-Mcp-Server-Request"

// NewRequestContexts returns an empty registry.
func NewRequestContexts() *RequestContexts { return &RequestContexts{} }

func (rc *RequestContexts) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := session.NewUUID()
		r.Header.Set(headerRequestID, id)
		rc.m.Store(id, r.Context())
		defer rc.m.Delete(id)
		next.ServeHTTP(w, r)
	})
}

// Lookup returns the context of the HTTP request that carried req, an
// ended context if that request is over, or nil (stdio, SSE).
func (rc *RequestContexts) Lookup(req *mcp.CallToolRequest) context.Context {
	if rc == nil || req == nil || req.Extra == nil || req.Extra.Header == nil {
		return nil
	}
	id := req.Extra.Header.Get(headerRequestID)
	if id == "" {
		return nil
	}
	v, ok := rc.m.Load(id)
	if !ok {
		// The request has ended before this call started, as the later
		// calls of a long batch do: nobody can receive the answer.
		return endedRequest
	}
	return v.(context.Context)
}

// DefaultSessionIdleTimeout is long enough for any call to finish.
const DefaultSessionIdleTimeout = time.Hour

// Paths served over HTTP.
const (
	PathMCP     = "/mcp"
	PathSSE     = "/sse"
	PathHealthz = "/healthz"
	PathMetrics = "/metrics"
)

// NewHTTPHandler serves srv over Streamable HTTP at /mcp and the legacy
// SSE transport at /sse (its message endpoint is /sse?sessionid=…), with
// /healthz for liveness checks and /readyz for readiness. Both MCP endpoints check the Origin header
// and, when tokens are configured, the bearer token.
func NewHTTPHandler(srv *mcp.Server, o HTTPOptions) http.Handler {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.SessionIdleTimeout <= 0 {
		o.SessionIdleTimeout = DefaultSessionIdleTimeout
	}
	if o.BodyReadTimeout <= 0 {
		o.BodyReadTimeout = config.DefaultBodyReadTimeout
	}
	get := func(*http.Request) *mcp.Server { return srv }
	streamable := mcp.NewStreamableHTTPHandler(get, &mcp.StreamableHTTPOptions{
		Stateless:           o.Stateless,
		MaxRequestBodyBytes: o.MaxBodyBytes,
		Logger:              o.Log,
		SessionTimeout:      o.SessionIdleTimeout,
		// A dropped POST can no longer carry the answer: stop the CLI.
		PropagateRequestCancellation: true,
	})
	guard := newGuard(o)
	// Refusals are decided on headers; only accepted requests have their
	// body read, and within a time limit.
	capped := func(h http.Handler) http.Handler { return h }
	if !o.Stateless {
		capped = sessionGuards(srv, o)
	}
	guarded := func(h http.Handler) http.Handler {
		return guard.cors(closeUntilAccepted(guard.wrap(o.Drain.wrapHTTP(capped(readBody(o.Inflight.wrapHTTP(h), o.BodyReadTimeout, o.MaxBodyBytes, o.MaxPromptBytes))))))
	}
	mux := http.NewServeMux()
	var mcpHandler http.Handler = streamable
	if o.Requests != nil {
		mcpHandler = o.Requests.wrap(streamable)
	}
	if o.Inflight != nil {
		srv.AddReceivingMiddleware(o.Inflight.middleware)
	}
	if o.Drain != nil {
		srv.AddReceivingMiddleware(o.Drain.middleware)
	}
	versions := newVersionGate(srv, o)
	mux.Handle(PathMCP, guarded(versions.wrap(mcpHandler)))
	if o.Stateless {
		mux.HandleFunc(PathSSE, func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "the SSE transport needs sessions and is off in stateless mode; use "+PathMCP, http.StatusNotFound)
		})
	} else {
		mux.Handle(PathSSE, guarded(versions.wrapSSE(mcp.NewSSEHandler(get, &mcp.SSEOptions{MaxRequestBodyBytes: o.MaxBodyBytes}))))
	}
	if o.OAuth != nil {
		// RFC 9728 metadata, unauthenticated: at the well-known path and
		// at its form suffixed with the resource's path (/mcp).
		meta := o.OAuth.metadataHandler()
		mux.Handle(PathResourceMetadata, meta)
		mux.Handle(PathResourceMetadata+PathMCP, meta)
		if u, err := url.Parse(o.OAuth.MetadataURL()); err == nil && u.Path != PathResourceMetadata && u.Path != PathResourceMetadata+PathMCP {
			mux.Handle(u.Path, meta)
		}
	}
	if o.Metrics != nil {
		mux.Handle(PathMetrics, guard.cors(guard.wrap(o.Metrics)))
	}
	mux.HandleFunc(PathHealthz, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"status": "ok", "name": Name, "version": o.Version})
	})
	mux.HandleFunc(PathReadyz, readyz(o.Drain, o.Ready, o.Version, o.Log))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, fmt.Sprintf("not found: MCP is served at %s (Streamable HTTP) and %s (SSE)", PathMCP, PathSSE), http.StatusNotFound)
	})
	return closeUnread(mux)
}

// guard checks what every MCP request must pass: its Origin (against DNS
// rebinding and cross-site requests from browsers) and its bearer token.
type guard struct {
	tokens    [][sha256.Size]byte
	oauthOpts *OAuthOptions
	origins   map[string]bool
	log       *slog.Logger
}

func newGuard(o HTTPOptions) *guard {
	g := &guard{origins: map[string]bool{}, log: o.Log, oauthOpts: o.OAuth}
	for _, t := range o.Tokens {
		g.tokens = append(g.tokens, sha256.Sum256([]byte(t)))
	}
	for _, origin := range o.AllowedOrigins {
		g.origins[strings.ToLower(strings.TrimRight(origin, "/"))] = true
	}
	return g
}

func (g *guard) wrap(next http.Handler) http.Handler {
	var oauth http.Handler // checks a token that is no static one, then serves next
	if g.oauthOpts != nil {
		oauth = g.oauthOpts.oauthCheck(next, g.log)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if origin := r.Header.Get("Origin"); origin != "" && !g.originAllowed(origin) {
			g.log.Warn("refused a request from a foreign origin", "origin", origin, "remote", r.RemoteAddr)
			http.Error(w, "origin not allowed: "+origin, http.StatusForbidden)
			return
		}
		// Only this check says who a request comes from: it names the
		// caller in the request's context (identity.With), which
		// every transport hands down to the tools.
		if oauth != nil {
			if g.checkToken(r) == nil {
				next.ServeHTTP(w, r.WithContext(identity.With(r.Context(), callerOf(r, true))))
				return
			}
			oauth.ServeHTTP(w, r)
			return
		}
		if len(g.tokens) > 0 {
			if err := g.checkToken(r); err != nil {
				challenge := `Bearer realm="gemini-mcp-server"`
				if r.Header.Get("Authorization") != "" {
					challenge += `, error="invalid_token"`
				}
				w.Header().Set("WWW-Authenticate", challenge)
				http.Error(w, err.Error(), http.StatusUnauthorized)
				return
			}
		}
		next.ServeHTTP(w, r.WithContext(identity.With(r.Context(), callerOf(r, len(g.tokens) > 0))))
	})
}

// originAllowed accepts loopback origins and the configured ones.
func (g *guard) originAllowed(origin string) bool {
	if g.origins[strings.ToLower(strings.TrimRight(origin, "/"))] {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return config.IsLoopbackHost(u.Hostname())
}

// checkToken compares the request's bearer token with every configured
// token in constant time (hashes of equal length, no early exit), so that
// timing reveals neither a token nor how many there are.
func (g *guard) checkToken(r *http.Request) error {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		return errors.New("missing bearer token: send Authorization: Bearer <token>")
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	match := 0
	for i := range g.tokens {
		match |= subtle.ConstantTimeCompare(sum[:], g.tokens[i][:])
	}
	if match != 1 {
		return errors.New("invalid bearer token")
	}
	return nil
}

// CheckBind refuses to serve on a non-loopback address without tokens,
// unless the operator said so explicitly.
func CheckBind(addr string, tokens []string, allowInsecure bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--http %q: %w (use host:port, e.g. 127.0.0.1:8080)", addr, err)
	}
	if config.IsLoopbackHost(host) || len(tokens) > 0 || allowInsecure {
		return nil
	}
	if host == "" {
		host = "all interfaces"
	}
	return fmt.Errorf("--http %s listens on %s without authentication: anyone who can reach it could run Gemini on this machine's account. "+
		"Set bearer tokens (GEMINI_MCP_TOKENS or --token-file), bind 127.0.0.1, or pass --allow-insecure-remote", addr, host)
}

// ServeOptions configures ServeHTTP.
type ServeOptions struct {
	// Grace bounds the whole shutdown; what still runs then is cut.
	Grace time.Duration
	// EndCalls cancels the tool calls in flight (each then answers its
	// client that it was cancelled). ServeHTTP calls it when ctx ends.
	EndCalls func()
	// Inflight is what shutdown waits for before it ends the remaining
	// streams; the handler must count into it (HTTPOptions.Inflight).
	Inflight *Inflight
	// Server, when set, has its sessions closed once the calls have
	// answered, so that nothing of them outlives ServeHTTP.
	Server *mcp.Server
	Log    *slog.Logger

	// MaxConns and MaxConnsPerIP bound the connections held, in all and
	// per client address (see connLimiter); 0 means no bound.
	MaxConns, MaxConnsPerIP int

	// Drain, when set (the handler's HTTPOptions.Drain), makes a stop
	// drain first: /readyz answers 503 at once, DrainDelay later new
	// sessions and calls are refused, and the calls in flight get up to
	// DrainTimeout to finish before the shutdown above (which cancels
	// what still runs) begins.
	Drain                    *Drain
	DrainDelay, DrainTimeout time.Duration
	// Hurry, when closed (a second signal), ends the drain at once: the
	// shutdown then cancels the calls in flight. nil: never.
	Hurry <-chan struct{}
}

// ServeHTTP serves h on ln until ctx ends, then drains (see
// ServeOptions.Drain) and shuts down within o.Grace: it refuses new connections, cancels the calls in flight and
// waits for their handlers to return (their CLIs reaped, their temp files
// removed) and for their answers to be written, so that every client gets
// one. Only then does it close the sessions and end the requests' base
// context, which stops the long-lived streams (GET /mcp, /sse), and wait
// for the connections to close. Until then requests keep a context of
// their own: ending them with ctx would drop the answers.
func ServeHTTP(ctx context.Context, ln net.Listener, h http.Handler, o ServeOptions) error {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	base, endStreams := context.WithCancel(context.WithoutCancel(ctx))
	defer endStreams()
	var fresh freshConns
	limits := newConnLimiter(ln, o.MaxConns, o.MaxConnsPerIP, o.Log)
	ln = limits
	hs := &http.Server{
		Handler: h,
		ConnState: func(c net.Conn, s http.ConnState) {
			fresh.track(c, s)
			limits.track(c, s)
		},
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(o.Log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	if o.Drain != nil {
		drain(o)
	}
	sctx, cancel := context.WithTimeout(context.Background(), o.Grace)
	defer cancel()
	fresh.closeAll()
	shut := make(chan error, 1)
	go func() { shut <- hs.Shutdown(sctx) }()
	if o.EndCalls != nil {
		o.EndCalls()
	}
	if o.Inflight != nil {
		if err := o.Inflight.Wait(sctx); err != nil {
			o.Log.Warn("calls still running at the end of the shutdown grace; stopping anyway", "grace", o.Grace)
		}
	}
	if o.Server != nil {
		// Closing a session waits for its requests in flight: bounded by
		// the grace, as everything else.
		closed := make(chan struct{})
		go func() {
			defer close(closed)
			for ss := range o.Server.Sessions() {
				ss.Close()
			}
		}()
		select {
		case <-closed:
		case <-sctx.Done():
		}
	}
	endStreams()
	err := <-shut
	if errors.Is(err, context.DeadlineExceeded) {
		err = hs.Close()
	}
	<-errc
	return err
}

// drain fails readiness, waits o.DrainDelay for the balancers to notice,
// refuses new sessions and calls, and waits up to o.DrainTimeout for the
// calls in flight. o.Hurry ends it at once, wherever it is.
func drain(o ServeOptions) {
	o.Drain.begin()
	o.Log.Info("draining: /readyz answers 503; new sessions and calls are refused after the delay", "delay", o.DrainDelay, "timeout", o.DrainTimeout)
	hurried := func() {
		o.Drain.close()
		o.Log.Warn("a second signal: the drain ends now; the calls in flight are cancelled")
	}
	if o.DrainDelay > 0 {
		t := time.NewTimer(o.DrainDelay)
		select {
		case <-t.C:
		case <-o.Hurry:
			t.Stop()
			hurried()
			return
		}
	}
	o.Drain.close()
	o.Log.Info("draining: refusing new sessions and calls; waiting for the calls in flight")
	if o.Inflight == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.DrainTimeout)
	defer cancel()
	if o.Hurry != nil {
		go func() {
			select {
			case <-o.Hurry:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	if err := o.Inflight.Wait(ctx); err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			hurried()
			return
		}
		o.Log.Warn("calls still running at the end of the drain timeout: cancelling them", "timeout", o.DrainTimeout)
		return
	}
	o.Log.Info("drained: no call in flight")
}

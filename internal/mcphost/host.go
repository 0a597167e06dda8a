package mcphost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/proc"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/redact"
)

// State is where the host stands with one server.
type State string

// A server starts disconnected, is connecting while the host connects and
// lists its tools, then connected or failed (with a reason); a failed or
// lost server is tried again after a backoff, a failed one staying failed
// until a try succeeds.
const (
	StateDisconnected State = "disconnected"
	StateConnecting   State = "connecting"
	StateConnected    State = "connected"
	StateFailed       State = "failed"
)

// Options tune a Host; the zero value is fine.
type Options struct {
	// Logger gets connection events and the stdio servers' stderr (at
	// debug level).
	Logger *slog.Logger
	// Environ is the environment stdio servers inherit, less secrets
	// (default os.Environ()).
	Environ []string
	// Version is this server's version, sent in initialize.
	Version string
	// Backoff is the delay before the nth attempt (n ≥ 1) to connect again
	// to a failed or lost server (default DefaultBackoff).
	Backoff func(n int) time.Duration
	// ChildEnv is added last to the environment of every stdio server
	// ("NAME=value" entries), over the server's own env setting.
	ChildEnv []string
	// Redactor masks secrets in what the host shows and logs, and in the
	// results it returns; New teaches it the configuration's secrets
	// (Secrets). Default: the Logger's own (redact.Of), else a new one.
	Redactor *redact.Redactor
}

// DefaultBackoff doubles from one second up to a minute.
func DefaultBackoff(n int) time.Duration {
	d := time.Second
	for i := 1; i < n && d < time.Minute; i++ {
		d *= 2
	}
	return min(d, time.Minute)
}

// Host connects to the configured MCP servers and offers their tools
// (backend.ToolHost). It connects in the background: New returns at once,
// and the tools of a server appear once it is connected.
type Host struct {
	log     *slog.Logger
	opts    Options
	red     *redact.Redactor
	servers []*server
	cancel  context.CancelFunc
	wg      sync.WaitGroup

	mu      sync.Mutex
	tools   []backend.HostTool
	byName  map[string]*server
	skipped []Skipped
	changed chan struct{} // closed and replaced on every change
}

var _ backend.ToolHost = (*Host)(nil)

type server struct {
	cfg     ServerConfig
	refresh chan struct{} // a tools/list_changed notification arrived
	check   chan struct{} // a call failed: is the connection still up?

	// Guarded by Host.mu.
	state     State
	reason    string
	transport string // the transport in use (http may fall back to sse)
	session   *mcp.ClientSession
	tools     []listedTool
	settled   bool // connected or failed at least once

	// overflow is set when the connection broke on a message over
	// MaxMessageBytes, for the error of the call that waited for it.
	overflow atomic.Bool
}

// New starts connecting to every server of cfg, in parallel, and returns
// at once. Close stops it.
func New(cfg *Config, opts Options) *Host {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Environ == nil {
		opts.Environ = os.Environ()
	}
	if opts.Backoff == nil {
		opts.Backoff = DefaultBackoff
	}
	if opts.Redactor == nil {
		opts.Redactor = redact.Of(opts.Logger.Handler())
	}
	if opts.Redactor == nil {
		opts.Redactor = redact.New()
	}
	opts.Redactor.Add(Secrets(cfg)...)
	if redact.Of(opts.Logger.Handler()) != opts.Redactor {
		opts.Logger = slog.New(redact.Handler(opts.Logger.Handler(), opts.Redactor))
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Host{log: opts.Logger, opts: opts, red: opts.Redactor, cancel: cancel, byName: map[string]*server{}, changed: make(chan struct{})}
	for _, c := range cfg.Servers {
		s := &server{cfg: c, refresh: make(chan struct{}, 1), check: make(chan struct{}, 1), state: StateDisconnected, transport: c.Transport()}
		h.servers = append(h.servers, s)
	}
	for _, s := range h.servers {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.run(ctx, s)
		}()
	}
	return h
}

// Close disconnects from every server and stops the stdio ones (with
// their process groups); calls in flight end with an error.
func (h *Host) Close() {
	h.cancel()
	h.wg.Wait()
}

// Tools implements backend.ToolHost: the tools of the servers connected
// now. The schemas are shared: do not change them.
func (h *Host) Tools() []backend.HostTool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]backend.HostTool(nil), h.tools...)
}

// Call implements backend.ToolHost.
func (h *Host) Call(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error) {
	h.mu.Lock()
	s := h.byName[name]
	var tool string
	var sess *mcp.ClientSession
	state, reason := StateDisconnected, ""
	if s != nil {
		for _, t := range h.tools {
			if t.Name == name {
				tool = t.Tool
			}
		}
		sess, state, reason = s.session, s.state, s.reason
	}
	h.mu.Unlock()
	if s == nil {
		return nil, fmt.Errorf("no MCP tool is declared as %q now (its server may have gone or changed its tools)", name)
	}
	if sess == nil || state != StateConnected {
		if reason != "" {
			reason = ": " + reason
		}
		return nil, fmt.Errorf("MCP server %q is %s%s", s.cfg.Name, state, h.red.String(reason))
	}
	if args == nil {
		args = map[string]any{}
	}
	timeout := s.cfg.CallTimeout()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := sess.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	err = h.maskError(callError(err, s.overflow.Load()))
	switch {
	case err == nil:
		limitResult(res)
		h.maskResult(res)
		return res, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("MCP tool %q of server %q: %w", tool, s.cfg.Name, ctx.Err())
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		return nil, fmt.Errorf("MCP tool %q of server %q did not answer within %s (mcpServers.%s.timeout, in milliseconds, allows longer): %w", tool, s.cfg.Name, timeout, s.cfg.Name, context.DeadlineExceeded)
	default:
		// The connection may be gone without the session knowing yet (an
		// HTTP server that died): have it checked.
		select {
		case s.check <- struct{}{}:
		default:
		}
		return nil, fmt.Errorf("MCP tool %q of server %q: %w", tool, s.cfg.Name, err)
	}
}

// maskedError is an error whose text has its secrets masked and is cut
// to MaxResultChars; it still matches its cause with errors.Is.
type maskedError struct {
	text string
	err  error
}

func (e *maskedError) Error() string { return e.text }
func (e *maskedError) Unwrap() error { return e.err }

func (h *Host) maskError(err error) error {
	if err == nil {
		return nil
	}
	text := truncateOutput(h.red.String(err.Error()), MaxResultChars)
	if text == err.Error() {
		return err
	}
	return &maskedError{text, err}
}

// maskResult masks the secrets the redactor knows in a tool's result,
// which goes to Gemini: a server may echo its own credentials.
func (h *Host) maskResult(res *mcp.CallToolResult) {
	if res == nil {
		return
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			c.Text = h.red.String(c.Text)
		case *mcp.EmbeddedResource:
			if c.Resource != nil {
				c.Resource.Text = h.red.String(c.Resource.Text)
			}
		case *mcp.ResourceLink:
			c.URI = h.red.String(c.URI)
		}
	}
	if res.StructuredContent != nil {
		if data, err := json.Marshal(res.StructuredContent); err == nil {
			if m := h.red.String(string(data)); m != string(data) {
				var v any
				if json.Unmarshal([]byte(m), &v) == nil {
					res.StructuredContent = v
				} else {
					res.StructuredContent = nil
				}
			}
		}
	}
}

// pingTimeout bounds the check of a connection after a failed call.
const pingTimeout = 5 * time.Second

// Changed returns a channel closed at the next change of a server's state
// or tools.
func (h *Host) Changed() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changed
}

// WaitSettled waits until every server has been connected or has failed
// at least once, or ctx ends.
func (h *Host) WaitSettled(ctx context.Context) error {
	for {
		h.mu.Lock()
		done := true
		for _, s := range h.servers {
			done = done && s.settled
		}
		ch := h.changed
		h.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// update changes a server's state under the lock, rebuilds the declared
// tools and wakes those waiting for a change.
func (h *Host) update(s *server, f func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f()
	if s.state == StateConnected || s.state == StateFailed {
		s.settled = true
	}
	var lists []listing
	for _, srv := range h.servers {
		if srv.state == StateConnected {
			lists = append(lists, listing{srv.cfg, srv.tools})
		}
	}
	h.tools, h.skipped = declare(lists)
	h.byName = make(map[string]*server, len(h.tools))
	for _, t := range h.tools {
		for _, srv := range h.servers {
			if srv.cfg.Name == t.Server {
				h.byName[t.Name] = srv
			}
		}
	}
	close(h.changed)
	h.changed = make(chan struct{})
}

// run keeps one server connected until ctx ends.
func (h *Host) run(ctx context.Context, s *server) {
	log := h.log.With("mcp_server", s.cfg.Name)
	defer h.update(s, func() {
		s.state, s.reason, s.session, s.tools = StateDisconnected, "", nil, nil
	})
	for attempt := 1; ; attempt++ {
		h.update(s, func() {
			// A failed server stays failed, with its reason, while it is
			// tried again: its status then says what is wrong rather
			// than flickering between failed and connecting.
			if s.state != StateFailed {
				s.state, s.reason = StateConnecting, ""
			}
		})
		sess, transport, tools, release, err := h.connect(ctx, s)
		if err == nil && ctx.Err() != nil {
			sess.Close()
			release()
		}
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			attempt = 0
			h.update(s, func() {
				s.state, s.reason, s.transport, s.session, s.tools = StateConnected, "", transport, sess, tools
			})
			// Logged once the tools are declared: tests wait for this line.
			log.Info("MCP server connected", "transport", transport, "tools", len(tools))
			err = h.serve(ctx, s, sess)
			release()
			if ctx.Err() != nil {
				return
			}
			err = fmt.Errorf("connection lost: %w", err)
		}
		log.Warn("MCP server failed", "error", err)
		h.update(s, func() {
			s.state, s.reason, s.session, s.tools = StateFailed, err.Error(), nil, nil
		})
		timer := time.NewTimer(h.opts.Backoff(max(attempt, 1)))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}

// serve waits for the session to end, refreshing the tools when the
// server says they changed. It closes the session before returning.
func (h *Host) serve(ctx context.Context, s *server, sess *mcp.ClientSession) error {
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	for {
		select {
		case <-ctx.Done():
			sess.Close()
			<-done
			return ctx.Err()
		case err := <-done:
			sess.Close()
			if err == nil {
				err = errors.New("the server closed the connection")
			}
			return err
		case <-s.check:
			pctx, cancel := context.WithTimeout(ctx, min(pingTimeout, s.cfg.CallTimeout()))
			err := sess.Ping(pctx, nil)
			cancel()
			if err != nil && ctx.Err() == nil {
				sess.Close()
				<-done
				return fmt.Errorf("no answer to ping after a failed call: %w", err)
			}
		case <-s.refresh:
			lctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout())
			tools, err := listTools(lctx, sess)
			cancel()
			if err != nil {
				h.log.Warn("MCP server: listing tools after a change failed", "mcp_server", s.cfg.Name, "error", err)
				continue
			}
			h.update(s, func() { s.tools = tools })
			h.log.Info("MCP server's tools changed", "mcp_server", s.cfg.Name, "tools", len(tools))
		}
	}
}

// connect connects to a server and lists its tools, within the server's
// timeout, as the CLI bounds its connect.
func (h *Host) connect(ctx context.Context, s *server) (*mcp.ClientSession, string, []listedTool, func(), error) {
	s.overflow.Store(false)
	timeout := s.cfg.CallTimeout()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "gemini-mcp-server", Version: h.opts.Version}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case s.refresh <- struct{}{}:
			default: // a refresh is pending already
			}
		},
	})
	transport := s.cfg.Transport()
	sess, release, err := dial(cctx, client, h.transport(s, transport))
	if err != nil && s.cfg.SSEFallback() && ctx.Err() == nil && !isAuthError(err) {
		// The CLI's rule for a url without a type: Streamable HTTP first,
		// then SSE; when both fail, the first error is the one reported.
		if sse, rel, err2 := dial(cctx, client, h.transport(s, TransportSSE)); err2 == nil {
			sess, release, err, transport = sse, rel, nil, TransportSSE
		}
	}
	if err != nil {
		if errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
			err = fmt.Errorf("no answer to initialize within %s (mcpServers.%s.timeout): %w", timeout, s.cfg.Name, err)
		}
		return nil, "", nil, nil, err
	}
	tools, err := listTools(cctx, sess)
	if err != nil {
		sess.Close()
		release()
		return nil, "", nil, nil, fmt.Errorf("listing tools: %w", callError(err, s.overflow.Load()))
	}
	return sess, transport, tools, release, nil
}

// dial connects within ctx. The transport gets a context of its own,
// cut off when ctx ends before the handshake is done but not after: the
// SDK's SSE transport ties its event stream to the context it connects
// with. It closes what the transport opened when the handshake fails (not
// every failure path of the SDK does), and release ends the connection's
// context once the session is over.
func dial(ctx context.Context, client *mcp.Client, t mcp.Transport) (sess *mcp.ClientSession, release func(), err error) {
	connCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	tt := &trackedTransport{Transport: t, ctx: connCtx}
	sess, err = client.Connect(ctx, tt, nil)
	if err != nil {
		stop()
		if tt.conn != nil {
			tt.conn.Close()
		}
		cancel()
		return nil, nil, err
	}
	if !stop() {
		// ctx ended just as the handshake finished: the stream is cut.
		sess.Close()
		cancel()
		return nil, nil, ctx.Err()
	}
	return sess, cancel, nil
}

type trackedTransport struct {
	mcp.Transport
	ctx  context.Context
	conn mcp.Connection
}

func (t *trackedTransport) Connect(context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(t.ctx)
	t.conn = c
	return c, err
}

func isAuthError(err error) bool {
	s := err.Error()
	return strings.Contains(s, "401") || strings.Contains(s, "Unauthorized")
}

func (h *Host) transport(s *server, kind string) mcp.Transport {
	cfg := s.cfg
	client := func(streamable bool) *http.Client {
		return &http.Client{Transport: &headerTransport{headers: cfg.Headers, origin: origin(cfg.Endpoint()), base: http.DefaultTransport, streamable: streamable, overflow: &s.overflow}}
	}
	switch kind {
	case TransportSSE:
		return &mcp.SSEClientTransport{Endpoint: cfg.Endpoint(), HTTPClient: client(false), MaxEventSize: MaxMessageBytes}
	case TransportHTTP:
		return &mcp.StreamableClientTransport{Endpoint: cfg.Endpoint(), HTTPClient: client(true), MaxEventSize: MaxMessageBytes}
	default:
		env := serverEnv(h.opts.Environ, cfg.Env, h.red)
		for _, kv := range h.opts.ChildEnv {
			k, v, _ := strings.Cut(kv, "=")
			env = proc.SetEnv(env, k, v)
		}
		return &stdioTransport{cfg: cfg, env: env, log: h.log, overflow: &s.overflow}
	}
}

// headerTransport adds the configured headers to every request to the
// configured server's origin (not to another host a redirect, or an SSE
// server's endpoint event, leads to: the headers usually carry a token)
// and, as the CLI does, turns a 404 to the optional GET stream of
// Streamable HTTP into the 405 that means "not offered".
type headerTransport struct {
	headers    map[string]string
	origin     string
	base       http.RoundTripper
	streamable bool
	overflow   *atomic.Bool
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 && origin(req.URL.String()) == t.origin {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	res, err := t.base.RoundTrip(req)
	if err == nil {
		limitBody(res, t.overflow)
	}
	if err == nil && req.Method == http.MethodGet && res.StatusCode == http.StatusNotFound && t.streamable {
		res.StatusCode, res.Status = http.StatusMethodNotAllowed, "405 Method Not Allowed"
	}
	return res, err
}

// origin is a URL's scheme, host and port ("" when it has none), which
// decides where the configured headers go.
func origin(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[strings.ToLower(u.Scheme)]
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// listTools lists a server's tools, none when it offers no tools, within
// MaxListPages pages and MaxServerTools tools.
func listTools(ctx context.Context, sess *mcp.ClientSession) ([]listedTool, error) {
	if ir := sess.InitializeResult(); ir == nil || ir.Capabilities == nil || ir.Capabilities.Tools == nil {
		return nil, nil
	}
	var tools []*mcp.Tool
	seen := map[string]bool{}
	params := &mcp.ListToolsParams{}
	for page := 1; ; page++ {
		res, err := sess.ListTools(ctx, params)
		if err != nil {
			return nil, err
		}
		tools = append(tools, res.Tools...)
		if len(tools) > MaxServerTools {
			return nil, fmt.Errorf("the server lists more than %d tools, this host's limit", MaxServerTools)
		}
		if res.NextCursor == "" {
			break
		}
		if page >= MaxListPages {
			return nil, fmt.Errorf("the server's tools/list goes on past %d pages, this host's limit", MaxListPages)
		}
		if seen[res.NextCursor] {
			return nil, fmt.Errorf("the server's tools/list gives the cursor %.40q a second time: it would be paged without end", res.NextCursor)
		}
		seen[res.NextCursor] = true
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
	return prepareTools(tools), nil
}

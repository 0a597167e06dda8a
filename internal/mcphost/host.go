package mcphost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
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
	// StateNeedsSignIn is a remote server that asks for an OAuth sign-in
	// the host cannot do alone: `gemini-mcp-server mcp auth <name>` does
	// it. The host keeps trying, so a sign-in made meanwhile is used.
	StateNeedsSignIn State = "needs-sign-in"
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
	// Tokens keeps the OAuth tokens of remote servers (default: in
	// memory, for this host's life).
	Tokens TokenStore
	// Browser, when set, lets a 401 start the browser step of an OAuth
	// sign-in (`mcp auth`); without it such a server needs sign-in.
	Browser Browser
	// ClientMetadataURL is the https URL of a Client ID Metadata Document
	// describing the host, its client ID with the authorization servers
	// that accept one; "" to register dynamically.
	ClientMetadataURL string
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

var (
	_ backend.ToolHost      = (*Host)(nil)
	_ backend.ToolExplainer = (*Host)(nil)
)

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

	// auth authorizes a remote server's requests (nil for stdio, and for
	// a server whose headers give an Authorization).
	auth    *serverAuth
	authErr error // the server's auth settings cannot be used

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
	if opts.Tokens == nil {
		opts.Tokens = &MemoryTokens{}
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Host{log: opts.Logger, opts: opts, red: opts.Redactor, cancel: cancel, byName: map[string]*server{}, changed: make(chan struct{})}
	for _, c := range cfg.Servers {
		s := &server{cfg: c, refresh: make(chan struct{}, 1), check: make(chan struct{}, 1), state: StateDisconnected, transport: c.Transport()}
		s.auth, s.authErr = h.newAuth(c)
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
	for _, s := range h.servers {
		if s.auth != nil && s.auth.signIn != nil {
			s.auth.signIn.close()
		}
	}
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
		if w := h.waitingFor(name); w != "" {
			return nil, fmt.Errorf("no MCP tool is declared as %q now: %w", name, &NeedsSignInError{Server: w})
		}
		return nil, fmt.Errorf("no MCP tool is declared as %q now (its server may have gone or changed its tools)", name)
	}
	if state == StateNeedsSignIn {
		return nil, &NeedsSignInError{Server: s.cfg.Name}
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
	if s.state == StateConnected || s.state == StateFailed || s.state == StateNeedsSignIn {
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

package mcphost

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pingTimeout bounds the check of a connection after a failed call.
const pingTimeout = 5 * time.Second

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
			if s.state != StateFailed && s.state != StateNeedsSignIn {
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
		state := StateFailed
		if ns := s.needsSignIn(); ns != nil {
			state, err = StateNeedsSignIn, ns
			log.Warn("MCP server needs sign-in", "error", err)
		} else {
			log.Warn("MCP server failed", "error", err)
		}
		h.update(s, func() {
			s.state, s.reason, s.session, s.tools = state, err.Error(), nil, nil
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
	if s.authErr != nil {
		return nil, "", nil, nil, s.authErr
	}
	timeout := s.cfg.CallTimeout()
	if s.auth != nil && s.auth.signIn != nil {
		// The sign-in's browser step may take its whole time.
		timeout = max(timeout, SignInTimeout+time.Minute)
	}
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
	if err != nil && s.auth != nil && s.auth.signIn != nil {
		if serr := s.auth.signInFailed(); serr != nil {
			// A failed sign-in is the answer: the fallback would start
			// another.
			return nil, "", nil, nil, serr
		}
	}
	if err != nil && s.cfg.SSEFallback() && ctx.Err() == nil && !isAuthError(err) && s.needsSignIn() == nil {
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

package mcphost

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/proc"
)

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
		return &http.Client{Transport: &headerTransport{headers: cfg.Headers, origin: origin(cfg.Endpoint()), base: http.DefaultTransport, streamable: streamable, overflow: &s.overflow, auth: s.auth}}
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

// headerTransport adds the configured headers, and the OAuth access token
// when the headers give no Authorization, to every request to the
// configured server's origin (not to another host a redirect, or an SSE
// server's endpoint event, leads to: both carry secrets); it answers a
// 401 as auth says (a refresh, a sign-in, or "needs sign-in") and sends
// the request once more when that gave a new token. As the CLI does, it
// turns a 404 to the optional GET stream of Streamable HTTP into the 405
// that means "not offered".
type headerTransport struct {
	headers    map[string]string
	origin     string
	base       http.RoundTripper
	streamable bool
	overflow   *atomic.Bool
	auth       *serverAuth // nil: headers only
}

func (t *headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ours := origin(req.URL.String()) == t.origin
	if ours && len(t.headers) > 0 {
		req = req.Clone(req.Context())
		for k, v := range t.headers {
			req.Header.Set(k, v)
		}
	}
	var res *http.Response
	var err error
	if ours && t.auth != nil && req.Header.Get("Authorization") == "" {
		res, err = t.authorized(req)
	} else {
		res, err = t.base.RoundTrip(req)
	}
	if err == nil {
		limitBody(res, t.overflow)
	}
	if err == nil && req.Method == http.MethodGet && res.StatusCode == http.StatusNotFound && t.streamable {
		res.StatusCode, res.Status = http.StatusMethodNotAllowed, "405 Method Not Allowed"
	}
	return res, err
}

// authorized sends req with the access token, and once more after a 401
// (or a 403 for insufficient scope) that gave a new one.
func (t *headerTransport) authorized(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	for try := 0; ; try++ {
		tok, err := t.auth.current(ctx)
		if err != nil {
			return nil, err
		}
		r := req.Clone(ctx)
		if try > 0 && req.Body != nil {
			if req.GetBody == nil {
				return nil, errors.New("the request cannot be sent again after the sign-in")
			}
			if r.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
		if tok != "" {
			r.Header.Set("Authorization", "Bearer "+tok)
		}
		res, err := t.base.RoundTrip(r)
		if err != nil || try > 0 || !challenge(res) {
			return res, err
		}
		again, err := t.auth.unauthorized(ctx, r, res, tok)
		if err != nil {
			return nil, err
		}
		if !again {
			return nil, fmt.Errorf("the server answered %s", res.Status)
		}
	}
}

// challenge reports a response an OAuth client answers: 401, or 403 with
// error="insufficient_scope" (step-up).
func challenge(res *http.Response) bool {
	switch res.StatusCode {
	case http.StatusUnauthorized:
		return true
	case http.StatusForbidden:
		cs, err := oauthex.ParseWWWAuthenticate(res.Header.Values("WWW-Authenticate"))
		return err == nil && slices.ContainsFunc(cs, func(c oauthex.Challenge) bool {
			return c.Scheme == "bearer" && c.Params["error"] == "insufficient_scope"
		})
	}
	return false
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

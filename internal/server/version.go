package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ModernProtocolVersion is the first MCP revision without sessions
// (2026-07-28): a client sends its version in every request's _meta and in
// the MCP-Protocol-Version header, and probes a server with server/discover
// instead of initialize.
const ModernProtocolVersion = "2026-07-28"

// HTTP headers of the Streamable HTTP transport.
const (
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerSessionID       = "Mcp-Session-Id"
	headerMethod          = "Mcp-Method"
)

const methodDiscover = "server/discover"

// versionGate keeps what the HTTP transports advertise consistent with what
// they serve, and holds each session to the protocol version it negotiated.
//
// The go-sdk serves 2026-07-28 on stdio and stateless Streamable HTTP only.
// On stateful /mcp it answers server/discover with a successful result that
// leaves 2026-07-28 out, then refuses every 2026-07-28 request: clients that
// trust the probe's success (mcp-go, mcp-remote --protocol auto) never fall
// back to initialize. The 2026-07-28 spec says that a server that does not
// serve the requested version answers with error -32022 listing the versions
// it does serve, and that is what the gate answers instead. The SSE
// transport advertises only older versions (2026-07-28 defines no SSE
// binding) but served 2026-07-28 requests anyway; the gate refuses those in
// the same way, so a client sees one story everywhere.
//
// The SDK also accepts any supported MCP-Protocol-Version header on a
// session, whatever the session negotiated, and applies that version's
// rules: an older one let JSON-RPC batches through on a session that
// negotiated a version without them. The gate makes the negotiated version
// govern every request of a session: a request without the header, or with
// another supported version on a single message, is served at the
// negotiated version (the spec lets a server rely on the version negotiated
// at initialization, and the official conformance suite sends 2025-03-26 on
// a 2025-11-25 session and expects an answer); a batch under another
// version's header, or a 2026-07-28 header, is refused with a 400 that says
// which version to send.
type versionGate struct {
	srv       *mcp.Server
	stateless bool
	maxBody   int64
	log       *slog.Logger
	// legacy are the versions served where 2026-07-28 is not, newest first.
	legacy []string

	mu sync.Mutex
	// negotiated maps a Streamable HTTP session id to the protocol version
	// its initialize answered. Entries of ended sessions are dropped on
	// DELETE, and the rest whenever the map has doubled since the last
	// sweep (see remember), so it stays within twice the live sessions.
	negotiated map[string]string
	sweepAt    int
}

// minSweep is the size below which the negotiated map is never swept.
const minSweep = 64

func newVersionGate(srv *mcp.Server, o HTTPOptions) *versionGate {
	g := &versionGate{
		srv:        srv,
		stateless:  o.Stateless,
		maxBody:    o.MaxBodyBytes,
		log:        o.Log,
		negotiated: map[string]string{},
		sweepAt:    minSweep,
	}
	if g.maxBody <= 0 {
		g.maxBody = mcp.DefaultMaxRequestBodyBytes
	}
	for _, v := range mcp.SupportedProtocolVersions() {
		if v < ModernProtocolVersion {
			g.legacy = append(g.legacy, v)
		}
	}
	srv.AddReceivingMiddleware(g.middleware)
	return g
}

// sseStreamKey marks the context of an SSE stream's GET request, which
// every request of that SSE session inherits.
type sseStreamKey struct{}

// wrapSSE marks the SSE transport's sessions so that the middleware can
// refuse 2026-07-28 requests on them.
func (g *versionGate) wrapSSE(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			r = r.WithContext(context.WithValue(r.Context(), sseStreamKey{}, true))
		}
		next.ServeHTTP(w, r)
	})
}

// wrap checks the protocol version of requests to stateful /mcp. Stateless
// /mcp serves every version itself and is left alone.
func (g *versionGate) wrap(next http.Handler) http.Handler {
	if g.stateless {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header := r.Header.Get(headerProtocolVersion)
		sid := r.Header.Get(headerSessionID)
		if sid == "" {
			if r.Method == http.MethodPost && (header >= ModernProtocolVersion || r.Header.Get(headerMethod) == methodDiscover) {
				if g.refuseDiscover(w, r, header) {
					return
				}
			}
			next.ServeHTTP(w, r)
			return
		}
		want, known := g.lookup(sid)
		if known && header != want {
			if header != "" && (header >= ModernProtocolVersion || g.isBatch(r)) {
				g.log.Warn("refused a request whose protocol version header differs from its session's", "header", header, "negotiated", want, "remote", r.RemoteAddr)
				http.Error(w, fmt.Sprintf("MCP-Protocol-Version %q is not the version this session negotiated (%s), whose rules this request breaks: send %s, or initialize a new session to use another version",
					header, want, want), http.StatusBadRequest)
				return
			}
			// The session's version governs: the SDK then applies its
			// rules (no batches from 2025-06-18 on) whatever the header.
			r.Header.Set(headerProtocolVersion, want)
		}
		next.ServeHTTP(w, r)
		if r.Method == http.MethodDelete {
			g.forget(sid)
		}
	})
}

// isBatch reports whether r's body is a JSON-RPC batch (an array), looking
// at its first bytes only; the body stays intact for the SDK.
func (g *versionGate) isBatch(r *http.Request) bool {
	if r.Method != http.MethodPost || r.Body == nil {
		return false
	}
	br := bufio.NewReaderSize(r.Body, 512)
	r.Body = struct {
		io.Reader
		io.Closer
	}{br, r.Body}
	head, _ := br.Peek(512)
	trimmed := bytes.TrimLeft(head, " \t\r\n")
	return len(trimmed) > 0 && trimmed[0] == '['
}

// refuseDiscover answers a 2026-07-28 server/discover on stateful /mcp with
// error -32022 and the versions served here, and reports whether it did.
// Other requests go on to the SDK with their body intact: it refuses the
// remaining 2026-07-28 requests with the same error itself.
func (g *versionGate) refuseDiscover(w http.ResponseWriter, r *http.Request, header string) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", tooBig.Limit), http.StatusRequestEntityTooLarge)
		} else {
			http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
		}
		return true
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(body, &req) != nil || req.Method != methodDiscover || len(req.ID) == 0 {
		return false
	}
	requested, _ := req.Params.Meta[mcp.MetaKeyProtocolVersion].(string)
	if requested == "" {
		requested = header
	}
	if requested < ModernProtocolVersion {
		return false
	}
	var id any
	if json.Unmarshal(req.ID, &id) != nil {
		return false
	}
	jid, err := jsonrpc.MakeID(id)
	if err != nil {
		return false
	}
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: jid, Error: g.unsupported(requested, "stateful "+PathMCP)})
	if err != nil {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(data)
	return true
}

// unsupported is the -32022 error for a request at version requested on
// where (a transport's name).
func (g *versionGate) unsupported(requested, where string) *jsonrpc.Error {
	data, _ := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: g.legacy, Requested: requested})
	return &jsonrpc.Error{
		Code: mcp.CodeUnsupportedProtocolVersion,
		Message: fmt.Sprintf("protocol version %q is not served on %s: use one of %s (initialize), or this server's stdio or --stateless HTTP, which serve %s",
			requested, where, strings.Join(g.legacy, ", "), ModernProtocolVersion),
		Data: data,
	}
}

// middleware refuses 2026-07-28 requests on SSE sessions and records the
// version that each Streamable HTTP session's initialize negotiated.
func (g *versionGate) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		sse := ctx.Value(sseStreamKey{}) != nil
		if sse {
			if v := requestedVersion(method, req); v >= ModernProtocolVersion {
				return nil, g.unsupported(v, "the SSE transport ("+PathSSE+")")
			}
		}
		res, err := next(ctx, method, req)
		if method == "initialize" && err == nil && !sse && !g.stateless {
			ss, _ := req.GetSession().(*mcp.ServerSession)
			ir, _ := res.(*mcp.InitializeResult)
			if ss != nil && ir != nil && ss.ID() != "" {
				g.remember(ss.ID(), ir.ProtocolVersion)
			}
		}
		return res, err
	}
}

// requestedVersion is the 2026-07-28-style version a request names in its
// _meta, or "" for a request of an older protocol. server/discover exists
// only from 2026-07-28 on, so it counts as such even without _meta.
func requestedVersion(method string, req mcp.Request) string {
	// Requests without params carry a typed nil pointer.
	if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() {
		if v, ok := p.GetMeta()[mcp.MetaKeyProtocolVersion].(string); ok && v != "" {
			return v
		}
	}
	if method == methodDiscover {
		return ModernProtocolVersion
	}
	return ""
}

func (g *versionGate) remember(sid, version string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.negotiated[sid] = version
	if len(g.negotiated) < g.sweepAt {
		return
	}
	// Sessions that ended without a DELETE (idle timeout, shutdown of a
	// stream) leave entries behind: keep only the live ones.
	live := map[string]bool{}
	for ss := range g.srv.Sessions() {
		live[ss.ID()] = true
	}
	for id := range g.negotiated {
		if !live[id] {
			delete(g.negotiated, id)
		}
	}
	g.sweepAt = max(minSweep, 2*len(g.negotiated))
}

func (g *versionGate) lookup(sid string) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	v, ok := g.negotiated[sid]
	return v, ok
}

func (g *versionGate) forget(sid string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.negotiated, sid)
}

package server

import (
	"context"
	"errors"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/trace"
)

// Network transports, as the MCP semantic conventions' network.transport
// names them.
const (
	TransportPipe = "pipe" // stdio
	TransportTCP  = "tcp"  // HTTP
)

// AddTracing adds the middleware that records a server span per request
// (not notifications) that s receives, when t is not nil. Call it after
// every other middleware, so that the span covers them too (the SDK runs
// the middleware added last first). The span's parent is the W3C
// traceparent of the request's params._meta when it is valid (a malformed
// one is ignored); its name and attributes follow the MCP semantic
// conventions: "{mcp.method.name} {gen_ai.tool.name}", mcp.method.name,
// gen_ai.tool.name, mcp.session.id, mcp.protocol.version,
// network.transport, and error.type when the request fails (the JSON-RPC
// error code, or tool_error for a tool result with isError), which is its
// status description too: an error's text, which may quote the prompt or
// the answer, is never recorded.
func AddTracing(s *mcp.Server, t *trace.Tracer, transport string) {
	if t == nil {
		return
	}
	s.AddReceivingMiddleware(tracing(t, transport))
}

func tracing(t *trace.Tracer, transport string) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		if t == nil {
			return next
		}
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if len(method) > 14 && method[:14] == "notifications/" {
				return next(ctx, method, req)
			}
			var parent trace.SpanContext
			var tool string
			if p := req.GetParams(); p != nil {
				if meta := p.GetMeta(); meta != nil {
					parent = remoteParent(meta)
				}
				if c, ok := p.(*mcp.CallToolParamsRaw); ok {
					tool = c.Name
				}
			}
			// The method is one the SDK knows, or it answers before any
			// middleware; the cap is for safety.
			m := method
			if len(m) > 128 {
				m = m[:128]
			}
			name := m
			if tool != "" {
				if len(tool) > 128 {
					tool = tool[:128]
				}
				name += " " + tool
			}
			ctx, span := t.StartServer(ctx, name, parent)
			if span == nil {
				return next(ctx, method, req)
			}
			defer span.End()
			span.SetAttrs(trace.String("mcp.method.name", m), trace.String("network.transport", transport))
			if tool != "" {
				span.SetAttrs(trace.String("gen_ai.tool.name", tool), trace.String("gen_ai.operation.name", "execute_tool"))
			}
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
				if id := ss.ID(); id != "" {
					span.SetAttrs(trace.String("mcp.session.id", id))
				}
			}
			if sr, ok := req.(interface{ ProtocolVersion() string }); ok {
				if v := sr.ProtocolVersion(); v != "" {
					span.SetAttrs(trace.String("mcp.protocol.version", v))
				}
			}
			res, err := next(ctx, method, req)
			switch r, _ := res.(*mcp.CallToolResult); {
			case err != nil:
				span.Fail(errorType(err))
			case r != nil && r.IsError:
				span.Fail("tool_error")
			}
			return res, err
		}
	}
}

// remoteParent reads traceparent and tracestate from a request's _meta;
// anything unusable gives the zero SpanContext.
func remoteParent(meta map[string]any) trace.SpanContext {
	tp, _ := meta["traceparent"].(string)
	sc, ok := trace.ParseTraceparent(tp)
	if !ok {
		return trace.SpanContext{}
	}
	if ts, ok := meta["tracestate"].(string); ok && len(ts) <= trace.MaxTracestate {
		sc.State = ts
	}
	return sc
}

// errorType is a failed request's error.type: its JSON-RPC error code,
// or the Go error's kind when it has none.
func errorType(err error) string {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return strconv.FormatInt(we.Code, 10)
	}
	if errors.Is(err, context.Canceled) {
		return "cancelled"
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timeout"
	}
	return "_OTHER"
}

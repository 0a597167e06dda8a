package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/mcptest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/otlprecv"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/trace"
)

// tracedServer is a server with one tool, echo, which fails as a tool
// when asked and starts a child span as a backend call does, traced to
// recv.
func tracedServer(t *testing.T, recv *otlprecv.Receiver) (*mcp.Server, *trace.Tracer) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	type in struct {
		Fail bool `json:"fail,omitempty"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(ctx context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, any, error) {
		_, span := trace.Start(ctx, "chat", trace.Client)
		span.End()
		if a.Fail {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "it failed"}}}, nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	tr := trace.New(trace.NewExporter(trace.ExporterOptions{URL: recv.URL + "/v1/traces", Service: "t"}), trace.Sampler{ParentBased: true, Ratio: 1})
	t.Cleanup(func() { _ = tr.Close(context.Background()) })
	AddTracing(s, tr, TransportPipe)
	return s, tr
}

// spansByName collects n spans, by name.
func spansByName(t *testing.T, recv *otlprecv.Receiver, n int) map[string][]otlprecv.Span {
	t.Helper()
	got := map[string][]otlprecv.Span{}
	for range n {
		select {
		case s := <-recv.Spans():
			got[s.Name] = append(got[s.Name], s)
		case <-t.Context().Done():
			t.Fatalf("only %v arrived", got)
		}
	}
	select {
	case s := <-recv.Spans():
		t.Fatalf("a span more than %d: %+v", n, s)
	default:
	}
	return got
}

// TestTracingMiddleware: a tools/call with a traceparent in _meta becomes
// a server span of that trace, its parent the caller's span, named and
// attributed by the MCP semantic conventions, with the handler's child
// span below it; a malformed traceparent is ignored (a root span, the
// call answered); a tool error is error.type tool_error; an unknown tool
// the JSON-RPC code; notifications make no span.
func TestTracingMiddleware(t *testing.T) {
	recv := otlprecv.Start(t)
	srv, tr := tracedServer(t, recv)
	cs := mcptest.Connect(t, srv, nil)
	ctx := t.Context()
	const parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Meta: mcp.Meta{"traceparent": parent, "tracestate": "congo=t61"}}); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"fail": true}, Meta: mcp.Meta{"traceparent": "00-0AF7651916CD43DD8448EB211C80319C-B7AD6B7169203331-01"}})
	if err != nil || !res.IsError {
		t.Fatalf("a malformed traceparent: %v, %+v; want the call answered", err, res)
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "nope"}); err == nil {
		t.Fatal("an unknown tool answered")
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// the handshake (initialize, or server/discover), three tools/call (one for an unknown tool), and the two
	// child spans of the calls that ran; notifications/initialized none.
	got := spansByName(t, recv, 6)
	if len(got["initialize"])+len(got["server/discover"]) != 1 || len(got["tools/call echo"]) != 2 || len(got["tools/call nope"]) != 1 || len(got["chat"]) != 2 {
		t.Fatalf("spans %v", got)
	}
	var traced, root otlprecv.Span
	for _, s := range got["tools/call echo"] {
		if s.ParentSpanID != "" {
			traced = s
		} else {
			root = s
		}
	}
	if traced.TraceID != "0af7651916cd43dd8448eb211c80319c" || traced.ParentSpanID != "b7ad6b7169203331" || traced.TraceState != "congo=t61" || traced.Kind != 2 {
		t.Errorf("the traced call's span %+v", traced)
	}
	for k, want := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "echo", "network.transport": "pipe", "error.type": ""} {
		if v := traced.Attr(k); v != want {
			t.Errorf("%s = %q, want %q", k, v, want)
		}
	}
	if traced.Attr("mcp.protocol.version") == "" || traced.Status.Code != 0 {
		t.Errorf("the traced call's span %+v: want a protocol version and no error", traced)
	}
	if root.TraceID == traced.TraceID || root.Attr("error.type") != "tool_error" || root.Status.Code != 2 || root.Status.Message != "tool_error" {
		t.Errorf("the malformed traceparent's span %+v: want a trace of its own, a tool_error", root)
	}
	var child bool
	for _, c := range got["chat"] {
		if c.ParentSpanID == traced.SpanID && c.TraceID == traced.TraceID {
			child = true
		}
	}
	if !child {
		t.Errorf("no child span of %s in %+v", traced.SpanID, got["chat"])
	}
	if s := got["tools/call nope"][0]; s.Attr("error.type") != "-32602" || s.Status.Code != 2 {
		t.Errorf("the unknown tool's span %+v: want error.type -32602", s)
	}
}

// TestTracingSampledOff: a caller's traceparent without the sampled flag
// is followed (parentbased): no span, and the call answered.
func TestTracingSampledOff(t *testing.T) {
	recv := otlprecv.Start(t)
	srv, tr := tracedServer(t, recv)
	cs := mcptest.Connect(t, srv, nil)
	if _, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "echo", Meta: mcp.Meta{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"}}); err != nil {
		t.Fatal(err)
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := spansByName(t, recv, 1); len(got["initialize"])+len(got["server/discover"]) != 1 {
		t.Errorf("spans %v: want only the handshake's", got)
	}
}

func TestErrorType(t *testing.T) {
	for err, want := range map[error]string{
		context.Canceled:         "cancelled",
		errors.New("x"):          "_OTHER",
		context.DeadlineExceeded: "timeout",
	} {
		if got := errorType(err); got != want {
			t.Errorf("errorType(%v) = %q, want %q", err, got, want)
		}
	}
}

// BenchmarkTracing is the middleware path of one tools/call with tracing
// off (no middleware: AddTracing adds none without a Tracer, and the
// backend hook is a context lookup) and on (a span per call, sampled,
// queued for an exporter that drops what its queue cannot hold).
func BenchmarkTracing(b *testing.B) {
	next := func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		_, span := trace.Start(ctx, "chat", trace.Client)
		span.End()
		return &mcp.CallToolResult{}, nil
	}
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "chat",
		Meta: mcp.Meta{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}}}
	run := func(b *testing.B, h mcp.MethodHandler) {
		b.ReportAllocs()
		ctx := context.Background()
		for b.Loop() {
			if _, err := h(ctx, "tools/call", req); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("off", func(b *testing.B) { run(b, next) })
	b.Run("on", func(b *testing.B) {
		// A receiver that reads and discards, as a collector does quickly.
		sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
		defer sink.Close()
		tr := trace.New(trace.NewExporter(trace.ExporterOptions{URL: sink.URL + "/v1/traces"}), trace.Sampler{Ratio: 1})
		defer func() { _ = tr.Close(context.Background()) }()
		run(b, tracing(tr, TransportPipe)(next))
	})
}

package api

import (
	"context"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/otlprecv"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/trace"
)

// TestToolCallSpans: in a traced turn, each downstream MCP tool call that
// runs is a client span below the request's span, a tool that answers
// isError marked tool_error; a tool that is not declared runs nothing and
// has no span.
func TestToolCallSpans(t *testing.T) {
	t.Parallel()
	recv := otlprecv.Start(t)
	tr := trace.New(trace.NewExporter(trace.ExporterOptions{URL: recv.URL + "/v1/traces", Service: "t"}), trace.Sampler{Ratio: 1})
	h := newTestHost(t, true)
	f := newFixture(t, Options{Tools: h})
	ctx, srv := tr.StartServer(guard(t), "tools/call chat", trace.SpanContext{})
	if _, err := f.b.Run(ctx, backend.Turn{Prompt: `[[call:mcp_demo_echo:{"text":"hi"}]] [[call:mcp_demo_fail:{"n":1}]] [[call:mcp_other_x:{}]]`}); err != nil {
		t.Fatal(err)
	}
	srv.End()
	if err := tr.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := map[string]otlprecv.Span{}
	for range 3 {
		s := <-recv.Spans()
		got[s.Name] = s
	}
	echo, fail := got["tools/call mcp_demo_echo"], got["tools/call mcp_demo_fail"]
	for _, s := range []otlprecv.Span{echo, fail} {
		if s.ParentSpanID != srv.Context().SpanID.String() || s.TraceID != srv.Context().TraceID.String() || s.Kind != 3 || s.Attr("mcp.method.name") != "tools/call" {
			t.Errorf("span %+v: want a client span below the request's", s)
		}
	}
	if echo.Status.Code != 0 || fail.Attr("error.type") != "tool_error" || fail.Status.Code != 2 {
		t.Errorf("echo %+v, fail %+v: want fail alone marked tool_error", echo, fail)
	}
	select {
	case s := <-recv.Spans():
		t.Errorf("a span more: %+v", s)
	default:
	}
}

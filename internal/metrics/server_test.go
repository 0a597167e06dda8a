package metrics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestModelLabelsBounded: the first MaxModels model names that look like
// model names are kept, any other is "other", none is "default".
func TestModelLabelsBounded(t *testing.T) {
	var m models
	for i := range MaxModels {
		if got := m.label(fmt.Sprint("gemini-", i)); got != fmt.Sprint("gemini-", i) {
			t.Fatalf("model %d: %q", i, got)
		}
	}
	for in, want := range map[string]string{"gemini-99": "other", "gemini-0": "gemini-0", "": "default",
		`evil"model` + "\n": "other", strings.Repeat("a", 65): "other"} {
		if got := m.label(in); got != want {
			t.Errorf("label(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestErrorTypes: an operation's error type is "" on success, tool_error
// for an error result, a known JSON-RPC code, cancelled, or other.
func TestErrorTypes(t *testing.T) {
	ctx := context.Background()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, c := range []struct {
		ctx  context.Context
		res  mcp.Result
		err  error
		want string
	}{
		{ctx, &mcp.CallToolResult{}, nil, ""},
		{ctx, &mcp.CallToolResult{IsError: true}, nil, "tool_error"},
		{ctx, nil, &jsonrpc.Error{Code: -32602, Message: "bad"}, "-32602"},
		{ctx, nil, fmt.Errorf("wrapped: %w", &jsonrpc.Error{Code: -32603}), "-32603"},
		{ctx, nil, &jsonrpc.Error{Code: 12345}, "other"},
		{cancelled, nil, errors.New("x"), "cancelled"},
		{ctx, nil, errors.New("x"), "other"},
	} {
		if got := errorType(c.ctx, c.res, c.err); got != c.want {
			t.Errorf("errorType(%v, %v) = %q, want %q", c.res, c.err, got, c.want)
		}
	}
}

// TestMiddlewareLabels: a tools/call of a tool outside the registry counts
// as "other", an unknown method as "other".
func TestMiddlewareLabels(t *testing.T) {
	s := New([]string{"chat"})
	h := s.Middleware(func(context.Context, string, mcp.Request) (mcp.Result, error) { return &mcp.CallToolResult{}, nil })
	call := func(name string) {
		h(context.Background(), "tools/call", &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: name}})
	}
	call("chat")
	call("made-up")
	h(context.Background(), "vendor/x", &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{}})
	for _, want := range [][]string{{"tools/call", "chat", ""}, {"tools/call", "other", ""}, {"other", "", ""}} {
		if n := s.operation.Count(want...); n != 1 {
			t.Errorf("%v: %d operations", want, n)
		}
	}
}

func TestHandler(t *testing.T) {
	s := New(nil)
	s.ObserveOperation("ping", "", "", time.Millisecond)
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "text/plain; version=0.0.4; charset=utf-8" ||
		!strings.Contains(rec.Body.String(), `mcp_server_operation_duration_seconds_count{mcp_method_name="ping",gen_ai_tool_name="",error_type=""} 1`) {
		t.Errorf("GET: %d %q\n%s", rec.Code, rec.Header().Get("Content-Type"), rec.Body.String())
	}
	checkFormat(t, rec.Body.String())
	rec = httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/metrics", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", rec.Code)
	}
}

// TestHooksOffCostNothing: with no Set enabled the hooks do nothing and
// allocate nothing.
func TestHooksOffCostNothing(t *testing.T) {
	Enable(nil)
	allocs := testing.AllocsPerRun(100, func() {
		running, done := BackendQueued()
		running()
		done()
		BackendCall("warm", "ok", time.Second)
		Tokens("warm", "m", 1, 2, 3, 4, 5)
		StoreOp("Get", time.Millisecond, nil)
		RateLimited("chat")
		WarmRecycle("idle")
		ModelFallback("gemini-2.5-pro", "gemini-2.5-flash")
	})
	if allocs != 0 {
		t.Errorf("hooks with metrics off: %v allocations", allocs)
	}
}

// TestModelFallbacks: each turn sent to the fallback model counts under
// its two models; a name that is no model's counts as "other", and the
// counter is written in the exposition.
func TestModelFallbacks(t *testing.T) {
	s := New(nil)
	Enable(s)
	defer Enable(nil)
	ModelFallback("gemini-2.5-pro", "gemini-2.5-flash")
	ModelFallback("gemini-2.5-pro", "gemini-2.5-flash")
	ModelFallback("other", "gemini-2.5-flash")
	ModelFallback(`evil"model`+"\n", "gemini-2.5-flash")
	if n := s.fallbacks.Value("gemini-2.5-pro", "gemini-2.5-flash"); n != 2 {
		t.Errorf("pro to flash: %d", n)
	}
	if n := s.fallbacks.Value("other", "gemini-2.5-flash"); n != 2 {
		t.Errorf("other to flash: %d", n)
	}
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `gemini_mcp_model_fallbacks_total{from="gemini-2.5-pro",to="gemini-2.5-flash"} 2`) ||
		strings.Contains(rec.Body.String(), "evil") {
		t.Errorf("exposition:\n%s", rec.Body.String())
	}
	checkFormat(t, rec.Body.String())
}

// BenchmarkMiddleware is the cost per MCP request of the metrics: "off" is
// the handler alone (with metrics off the middleware is not installed),
// "on" the handler timed by the middleware.
func BenchmarkMiddleware(b *testing.B) {
	next := func(context.Context, string, mcp.Request) (mcp.Result, error) { return &mcp.CallToolResult{}, nil }
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "chat"}}
	for name, h := range map[string]mcp.MethodHandler{"off": next, "on": New([]string{"chat"}).Middleware(next)} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			ctx := context.Background()
			for b.Loop() {
				h(ctx, "tools/call", req)
			}
		})
	}
}

// BenchmarkBackendHooks is the cost per backend call of the hooks in
// backend.Limit, off and on.
func BenchmarkBackendHooks(b *testing.B) {
	run := func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			running, done := BackendQueued()
			running()
			BackendCall("warm", "ok", time.Second)
			Tokens("warm", "gemini-2.5-flash", 1000, 200, 0, 50, 0)
			done()
		}
	}
	b.Run("off", func(b *testing.B) { Enable(nil); run(b) })
	b.Run("on", func(b *testing.B) { Enable(New(nil)); defer Enable(nil); run(b) })
}

package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/otlprecv"
)

// The receiver of these tests is internal/geminitest/otlprecv, which
// decodes OTLP/HTTP JSON as the OTLP specification defines it (no
// OpenTelemetry Collector is packaged for Debian).

const (
	callerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpan  = "00f067aa0ba902b7"
	traceSecret = "tr4ce-s3cret"
)

// received collects the spans that have arrived, by name: the server has
// exited, and it flushed its spans before it did.
func received(t *testing.T, recv *otlprecv.Receiver) map[string][]otlprecv.Span {
	t.Helper()
	got := map[string][]otlprecv.Span{}
	for {
		select {
		case s := <-recv.Spans():
			got[s.Name] = append(got[s.Name], s)
		default:
			return got
		}
	}
}

func wantAttrs(t *testing.T, s otlprecv.Span, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got := s.Attr(k); got != v {
			t.Errorf("span %q: %s = %q, want %q", s.Name, k, got, v)
		}
	}
}

// TestTracesStdio: the real server on the API backend (the fake Gemini
// API), with OTEL_EXPORTER_OTLP_ENDPOINT pointing at a loopback receiver.
// A chat whose params._meta carries a traceparent gives a server span of
// the caller's trace, its parent the caller's span, named and attributed
// as the MCP semantic conventions say, and a child span of the backend
// call with the GenAI attributes and the token usage; the spans arrive
// when the client closes stdin (the flush at shutdown); the exporter's
// header is sent, and never logged.
func TestTracesStdio(t *testing.T) {
	t.Parallel()
	recv := otlprecv.Start(t)
	e, _ := apiEnv(t)
	e.vars = append(e.vars, "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL, "OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20"+traceSecret,
		"GEMINI_MCP_BACKEND=api")
	cmd := e.command()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "traces-test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "traced"},
		Meta: mcp.Meta{"traceparent": "00-" + callerTrace + "-" + callerSpan + "-01"}})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %+v\n%s", err, res, stderr.String())
	}
	if err := cs.Close(); err != nil { // stdin closed: the server exits
		t.Fatal(err)
	}
	got := received(t, recv)
	if len(got["tools/call chat"]) != 1 || len(got["chat"]) != 1 {
		t.Fatalf("spans %v\n%s", got, stderr.String())
	}
	srv, be := got["tools/call chat"][0], got["chat"][0]
	if srv.TraceID != callerTrace || srv.ParentSpanID != callerSpan || srv.Kind != 2 || srv.Status.Code != 0 {
		t.Errorf("server span %+v: want the caller's trace and span as parent, kind server, no error", srv)
	}
	wantAttrs(t, srv, map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "chat", "network.transport": "pipe"})
	if srv.Attr("mcp.protocol.version") == "" || srv.Resource["service.name"] != "gemini-mcp-server" || srv.Resource["service.version"] != "v9.8.7-test" {
		t.Errorf("server span %+v", srv)
	}
	if be.TraceID != callerTrace || be.ParentSpanID != srv.SpanID || be.Kind != 3 {
		t.Errorf("backend span %+v: want the server span's child", be)
	}
	wantAttrs(t, be, map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "gcp.gemini", "gemini_mcp.backend": "api", "gemini_mcp.outcome": "ok"})
	if be.Attr("gen_ai.usage.input_tokens") == "" || be.Attr("gen_ai.usage.output_tokens") == "" {
		t.Errorf("backend span %+v: want the token usage", be)
	}
	h := recv.Headers()
	if len(h) == 0 || h[0].Get("Authorization") != "Bearer "+traceSecret {
		t.Errorf("the exporter's requests carried %v", h)
	}
	if strings.Contains(stderr.String(), traceSecret) || !strings.Contains(stderr.String(), "traces: exporting over OTLP/HTTP") {
		t.Errorf("stderr names the header's secret, or not the exporter:\n%s", stderr.String())
	}
}

// TestTracesRedirectNotFollowed: a receiver that redirects (307) to
// another origin (here another port of 127.0.0.1, where a real receiver
// listens) does not get the spans sent there with the
// OTEL_EXPORTER_OTLP_HEADERS secret: the other origin hears nothing, the
// log says why and names no secret.
func TestTracesRedirectNotFollowed(t *testing.T) {
	t.Parallel()
	recv := otlprecv.Start(t)
	var redirected atomic.Int32
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		redirected.Add(1)
		http.Redirect(w, r, recv.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(front.Close)
	e, _ := apiEnv(t)
	e.vars = append(e.vars, "OTEL_EXPORTER_OTLP_ENDPOINT="+front.URL, "OTEL_EXPORTER_OTLP_HEADERS=x-api-key="+traceSecret,
		"GEMINI_MCP_BACKEND=api")
	cmd := e.command()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "traces-test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "traced"}})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %+v\n%s", err, res, stderr.String())
	}
	if err := cs.Close(); err != nil { // stdin closed: the server flushes its spans and exits
		t.Fatal(err)
	}
	if redirected.Load() == 0 {
		t.Fatalf("the exporter did not post to the endpoint\n%s", stderr.String())
	}
	if h := recv.Headers(); len(h) != 0 {
		t.Errorf("the origin redirected to got %d requests, headers %v", len(h), h)
	}
	if !strings.Contains(stderr.String(), "not followed") || strings.Contains(stderr.String(), traceSecret) {
		t.Errorf("stderr does not say the redirect was not followed, or names the secret:\n%s", stderr.String())
	}
}

// TestTracesHTTP: over HTTP the server span says tcp and names the MCP
// session; a malformed traceparent starts a trace of its own and the call
// is answered; the spans are flushed at SIGTERM.
func TestTracesHTTP(t *testing.T) {
	t.Parallel()
	recv := otlprecv.Start(t)
	e := newEnv(t)
	e.vars = append(e.vars, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT="+recv.URL+"/v1/traces", "OTEL_SERVICE_NAME=gemini-traced")
	addr, stop := startHTTP(t, e)
	cs := httpClient(t, addr, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "traced"},
		Meta: mcp.Meta{"traceparent": "00-" + strings.ToUpper(callerTrace) + "-" + callerSpan + "-01"}})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %+v", err, res)
	}
	if err := stop(); err != nil {
		t.Fatalf("the server's exit: %v", err)
	}
	got := received(t, recv)
	if len(got["tools/call chat"]) != 1 || len(got["chat"]) != 1 {
		t.Fatalf("spans %v", got)
	}
	srv, be := got["tools/call chat"][0], got["chat"][0]
	if srv.TraceID == callerTrace || srv.ParentSpanID != "" || srv.Resource["service.name"] != "gemini-traced" {
		t.Errorf("server span %+v: a malformed traceparent must give a root span", srv)
	}
	wantAttrs(t, srv, map[string]string{"network.transport": "tcp", "mcp.session.id": cs.ID()})
	wantAttrs(t, be, map[string]string{"gemini_mcp.backend": "oneshot", "gen_ai.provider.name": "gcp.gemini"})
	if be.ParentSpanID != srv.SpanID {
		t.Errorf("backend span %+v: want the server span's child", be)
	}
}

// TestTracesOff: without OTEL_EXPORTER_OTLP_ENDPOINT nothing is traced
// (no exporter is started, nothing said of traces); with OTEL_SDK_DISABLED
// the receiver an endpoint names hears nothing.
func TestTracesOff(t *testing.T) {
	t.Parallel()
	recv := otlprecv.Start(t)
	for _, vars := range [][]string{
		{"OTEL_SERVICE_NAME=x"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT=" + recv.URL, "OTEL_SDK_DISABLED=true"},
	} {
		e := newEnv(t)
		e.vars = append(e.vars, vars...)
		cmd := e.command()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "traces-off", Version: "1"}, nil).
			Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "untraced"},
			Meta: mcp.Meta{"traceparent": "00-" + callerTrace + "-" + callerSpan + "-01"}})
		cancel()
		if err != nil || res.IsError {
			t.Fatalf("chat: %v %+v", err, res)
		}
		if err := cs.Close(); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(stderr.String(), "traces:") {
			t.Errorf("%v: the server speaks of traces:\n%s", vars, stderr.String())
		}
	}
	if h := recv.Headers(); len(h) != 0 {
		t.Errorf("the receiver heard %d requests", len(h))
	}
}

// TestTracesBadSetting: a setting the server cannot use stops it at
// start, naming the variable.
func TestTracesBadSetting(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.vars = append(e.vars, "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc")
	out, err := e.command().CombinedOutput()
	if err == nil || !strings.Contains(string(out), "OTEL_EXPORTER_OTLP_PROTOCOL") {
		t.Fatalf("the server with OTLP over gRPC asked: %v\n%s", err, out)
	}
}

// TestTracesCarryNoContent: the spans of failing calls carry the error's
// kind and code only, never its text, which quotes the answer (a
// response_schema mismatch) or the arguments (a refused URL); the
// server's log, at debug level, names neither the prompts nor the
// answer either. Before, the server span's status held the first 1 KiB
// of the tool's error text: the answer, which here holds the canary.
func TestTracesCarryNoContent(t *testing.T) {
	t.Parallel()
	recv := otlprecv.Start(t)
	h := newHostEnv(t, map[string]any{})
	h.vars = append(h.vars, "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.URL)
	cs := h.stdio(t, nil, "")
	const canary = "c4n4ry"
	schema := map[string]any{"type": "object", "required": []any{"name", "stars"},
		"properties": map[string]any{"name": map[string]any{"type": "string"}, "stars": map[string]any{"type": "integer", "minimum": 0}}}
	callErr(t, cs, "chat", map[string]any{"prompt": `prompt-` + canary + ` [[json:{"name":"answer-` + canary + `","stars":-3}]]`,
		"response_schema": schema}, "does not satisfy response_schema", "answer-"+canary)
	callErr(t, cs, "chat", map[string]any{"prompt": "prompt-" + canary + "-url", "urls": []any{"http://127.0.0.1/url-" + canary}}, "url-"+canary)
	callErr(t, cs, "chat", map[string]any{"prompt": "prompt-" + canary + "-api [[status:400]]"}, "400")
	if err := cs.Close(); err != nil { // stdin closed: the server flushes its spans and exits
		t.Fatal(err)
	}
	got := received(t, recv)
	if len(got["tools/call chat"]) != 3 || len(got["chat"]) != 2 {
		t.Fatalf("spans %v", got)
	}
	failed := 0
	for name, spans := range got {
		for _, s := range spans {
			if strings.Contains(s.Name, canary) || strings.Contains(s.Status.Message, canary) {
				t.Errorf("span %q carries the call's content: status %+v", name, s.Status)
			}
			for _, a := range s.Attributes {
				if v := s.Attr(a.Key); strings.Contains(v, canary) {
					t.Errorf("span %q: attribute %s = %q carries the call's content", name, a.Key, v)
				}
			}
			if s.Status.Code == 2 {
				failed++
				if s.Status.Message != s.Attr("error.type") {
					t.Errorf("span %q: status message %q, want its error.type %q", name, s.Status.Message, s.Attr("error.type"))
				}
			}
		}
	}
	if failed != 4 { // three tool calls, one backend call
		t.Errorf("%d failed spans, want 4: %v", failed, got)
	}
	for _, s := range got["chat"] {
		if s.Status.Code == 2 && (s.Attr("error.type") != "api" || s.Attr("http.response.status_code") != "400") {
			t.Errorf("the failed backend span %+v: want error.type api, http.response.status_code 400", s)
		}
	}
	if log := h.stderr.String(); strings.Contains(log, canary) {
		t.Errorf("the server's log names the prompt or the answer:\n%s", log)
	}
}

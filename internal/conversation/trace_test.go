package conversation

import (
	"context"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/otlprecv"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/trace"
)

// scripted answers each turn with its answer or its error.
type scripted struct {
	answer *backend.Answer
	err    error
	traced bool // whether the turn's ctx carried a span
	runs   int
}

func (s *scripted) Name() string          { return "oneshot" }
func (s *scripted) Family() config.Family { return config.FamilyCLI }
func (s *scripted) Close()                {}
func (s *scripted) Run(ctx context.Context, _ backend.Turn) (*backend.Answer, error) {
	s.traced = trace.FromContext(ctx) != nil
	s.runs++
	return s.answer, s.err
}

// TestRunBackendSpan: a traced turn runs in a child span of the request's
// with the backend, the model, the usage and the outcome; a failed one has
// status error and error.type the backend's kind; an untraced turn makes
// no span and the backend sees no span.
func TestRunBackendSpan(t *testing.T) {
	recv := otlprecv.Start(t)
	tr := trace.New(trace.NewExporter(trace.ExporterOptions{URL: recv.URL + "/v1/traces", Service: "t"}), trace.Sampler{Ratio: 1})
	ok := &scripted{answer: &backend.Answer{SessionID: session.NewUUID(), Text: "hi", Via: "json", Usage: &backend.Usage{PromptTokens: 12, OutputTokens: 34, ThinkingTokens: 5}}}
	bad := &scripted{err: &backend.Error{Kind: backend.KindTimeout, Reason: "the call took too long"}}
	store := memstore.New(session.Options{})
	t.Cleanup(func() { _ = store.Close() })
	for _, b := range []*scripted{ok, bad} {
		d := New(Options{Backend: b, Store: store, DefaultCwd: t.TempDir()})
		ctx, srv := tr.StartServer(context.Background(), "tools/call chat", trace.SpanContext{})
		_, _, _ = d.run(ctx, Call{}, backend.Turn{Prompt: "p", Model: "gemini-x", Dir: t.TempDir()}, "p")
		srv.End()
		if !b.traced {
			t.Error("the backend's ctx carried no span")
		}
	}
	untraced := &scripted{answer: ok.answer}
	if _, _, err := New(Options{Backend: untraced, Store: store}).run(context.Background(), Call{}, backend.Turn{Prompt: "p", Dir: t.TempDir()}, "p"); err != nil || untraced.traced {
		t.Errorf("an untraced turn: %v, traced %v", err, untraced.traced)
	}
	if err := tr.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	var chats []otlprecv.Span
	for range 4 {
		s := <-recv.Spans()
		if s.Name == "chat gemini-x" {
			chats = append(chats, s)
		}
	}
	if len(chats) != 2 {
		t.Fatalf("backend spans %+v", chats)
	}
	good, failed := chats[0], chats[1]
	for k, v := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "gcp.gemini", "gen_ai.request.model": "gemini-x",
		"gemini_mcp.backend": "oneshot", "gemini_mcp.via": "json", "gemini_mcp.outcome": "ok",
		"gen_ai.usage.input_tokens": "12", "gen_ai.usage.output_tokens": "34", "gen_ai.usage.reasoning.output_tokens": "5"} {
		if got := good.Attr(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	if failed.Attr("error.type") != "timeout" || failed.Attr("gemini_mcp.outcome") != "error" || failed.Status.Code != 2 || failed.Status.Message != "timeout" {
		t.Errorf("the failed turn's span %+v", failed)
	}
	if good.Status.Code != 0 || good.Kind != 3 {
		t.Errorf("the answered turn's span %+v", good)
	}
}

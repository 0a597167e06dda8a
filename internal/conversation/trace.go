package conversation

import (
	"context"
	"errors"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/trace"
)

// runBackend runs the turn on the backend, in a child span of the
// request's span when it is traced (internal/trace): the GenAI semantic
// conventions' "chat {gen_ai.request.model}" with the backend, the
// model, the token usage and the outcome.
func (d *Service) runBackend(ctx context.Context, call backend.Turn) (*backend.Answer, error) {
	if trace.FromContext(ctx) == nil {
		return d.o.Backend.Run(ctx, call)
	}
	name := "chat"
	if call.Model != "" {
		name += " " + call.Model
	}
	ctx, span := trace.Start(ctx, name, trace.Client)
	defer span.End()
	provider := "gcp.gemini"
	if p, ok := d.o.Backend.(interface{ Provider() string }); ok {
		provider = p.Provider()
	}
	span.SetAttrs(trace.String("gen_ai.operation.name", "chat"), trace.String("gen_ai.provider.name", provider),
		trace.String("gemini_mcp.backend", d.o.Backend.Name()))
	if call.Model != "" {
		span.SetAttrs(trace.String("gen_ai.request.model", call.Model))
	}
	res, err := d.o.Backend.Run(ctx, call)
	if err != nil {
		// The error's kind and codes only: its text may quote the
		// prompt or the answer (a CLI's message, the API's).
		kind := "_OTHER"
		var be *backend.Error
		if errors.As(err, &be) {
			kind = string(be.Kind)
			if be.Status != 0 {
				span.SetAttrs(trace.Int("http.response.status_code", int64(be.Status)))
			}
			if be.Exited {
				span.SetAttrs(trace.Int("process.exit.code", int64(be.ExitCode)))
			}
		}
		span.SetAttrs(trace.String("gemini_mcp.outcome", "error"))
		span.Fail(kind)
		return res, err
	}
	outcome := "ok"
	if res.Incomplete != "" {
		outcome = "incomplete"
	}
	span.SetAttrs(trace.String("gemini_mcp.outcome", outcome), trace.String("gemini_mcp.via", res.Via))
	if res.Model != "" {
		span.SetAttrs(trace.String("gen_ai.response.model", res.Model))
	}
	if u := res.Usage; u != nil {
		span.SetAttrs(trace.Int("gen_ai.usage.input_tokens", int64(u.PromptTokens)), trace.Int("gen_ai.usage.output_tokens", int64(u.OutputTokens)))
		if u.ThinkingTokens > 0 {
			span.SetAttrs(trace.Int("gen_ai.usage.reasoning.output_tokens", int64(u.ThinkingTokens)))
		}
	}
	return res, nil
}

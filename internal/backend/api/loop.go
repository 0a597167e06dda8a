package api

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/genai"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/trace"
)

// converse asks Gemini for the answer to contents and, while Gemini answers
// with function calls, runs them and sends their results back, at most
// maxRounds times: after the last round allowed, the results go back with
// function calling turned off, so that Gemini answers with what it has.
// It returns the final answer, the exchange that led to it (Gemini's calls
// and the results, in order, for the history) and notes for
// Answer.NotApplied.
func (b *Backend) converse(parent, ctx context.Context, id string, t backend.Turn, model string, contents []*genai.Content,
	cfg *genai.GenerateContentConfig, obs backend.Observer) (res *streamResult, exchange []*genai.Content, notes []string, err error) {
	var usage *backend.Usage // of all the rounds' requests
	calls := 0               // of all the rounds
	var thoughts []string    // of all the rounds
	builtins := builtinTools(t.Builtins)
	hostTools := b.tools != nil
	if builtins != nil || len(t.ResponseSchema) > 0 {
		// The Gemini API takes its built-in tools beside function
		// declarations only for Gemini 3 models, and only with server-side
		// tool invocations turned on; function calling with a JSON
		// response it refuses on models before Gemini 3. Such a turn goes
		// without the MCP host's tools.
		cfg.Tools = builtins
		if hostTools && len(b.tools.Tools()) > 0 {
			notes = append(notes, "tools: the MCP servers' tools were not offered to Gemini on this turn: "+
				"the Gemini API does not take them together with google_search, urls, code_execution or response_schema on every model")
		}
		hostTools = false
	}
	for round := 0; ; round++ {
		var tools map[string]backend.HostTool
		if hostTools {
			tools = declare(b.tools.Tools(), cfg)
			if round >= b.maxRounds && cfg.Tools != nil {
				cfg.ToolConfig = &genai.ToolConfig{FunctionCallingConfig: &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeNone}}
			}
		}
		res, err := b.streamWithRetries(parent, ctx, model, contents, cfg, obs)
		if err != nil {
			if round > 0 {
				// Gemini's tool calls have run: the turn cannot start
				// again on a fallback model.
				err = unmarkExhausted(err)
			}
			return nil, nil, nil, err
		}
		if res.usage != nil {
			if usage == nil {
				usage = &backend.Usage{}
			}
			usage.Add(res.usage)
		}
		res.usage = usage
		if res.thoughts != "" {
			thoughts = append(thoughts, res.thoughts)
		}
		res.thoughts = strings.Join(thoughts, "\n\n")
		if len(res.calls) == 0 {
			if round >= b.maxRounds {
				notes = append(notes, fmt.Sprintf("tools: Gemini used the %d rounds of tool calls this server allows "+
					"(--max-tool-rounds) and was asked for its answer without more", b.maxRounds))
			}
			return res, exchange, notes, nil
		}
		if res.incomplete {
			return nil, nil, nil, newError(backend.KindBadOutput, nil, "the Gemini API's stream ended without a finish "+
				"reason while Gemini asked for tool calls, so some may be missing; none was run, and nothing was "+
				"recorded; try again")
		}
		if endingOf(res.finish) != endWhole {
			return nil, nil, nil, newError(backend.KindBadOutput, nil, "the Gemini API stopped the answer (finish "+
				"reason %s) while Gemini asked for tool calls, so some may be missing; none was run, and nothing was "+
				"recorded; try again", res.finish)
		}
		if calls += len(res.calls); calls > MaxCallsPerTurn {
			return nil, nil, nil, newError(backend.KindOutputTooBig, nil, "Gemini asked for more than %d function "+
				"calls in one turn, this server's cap, and was stopped; ask for fewer tool calls at once", MaxCallsPerTurn)
		}
		if round >= b.maxRounds {
			return nil, nil, nil, newError(backend.KindFailed, nil, "Gemini still asked for tool calls after the %d "+
				"rounds this server allows (--max-tool-rounds), although told to answer; try again, or raise "+
				"--max-tool-rounds", b.maxRounds)
		}
		call := &genai.Content{Role: genai.RoleModel, Parts: res.parts}
		parts, unfinished := b.runCalls(ctx, id, t, model, tools, res.calls, obs)
		results := &genai.Content{Role: genai.RoleUser, Parts: parts}
		if ctx.Err() != nil {
			return nil, nil, nil, toolsContextError(parent, b.timeout, unfinished)
		}
		contents = append(contents, call, results)
		exchange = append(exchange, call, results)
	}
}

// declare offers tools to Gemini in cfg and returns them by name.
func declare(tools []backend.HostTool, cfg *genai.GenerateContentConfig) map[string]backend.HostTool {
	cfg.Tools = nil
	if len(tools) == 0 {
		return nil
	}
	byName := make(map[string]backend.HostTool, len(tools))
	decls := make([]*genai.FunctionDeclaration, 0, len(tools))
	for _, ht := range tools {
		if ht.Name == "" {
			continue
		}
		byName[ht.Name] = ht
		fd := &genai.FunctionDeclaration{Name: ht.Name, Description: ht.Description}
		if ht.Schema != nil {
			fd.ParametersJsonSchema = ht.Schema
		}
		decls = append(decls, fd)
	}
	cfg.Tools = []*genai.Tool{{FunctionDeclarations: decls}}
	return byName
}

// runCalls runs Gemini's function calls, the allowed ones in parallel,
// and returns the parts that answer them, in the calls' order. A call that
// fails, or that may not run, is answered with an error for Gemini to read:
// it does not fail the turn. The user is asked about one call at a time.
// unfinished names the calls that ctx's end cut short, for the error that
// then ends the turn.
func (b *Backend) runCalls(ctx context.Context, id string, t backend.Turn, model string, tools map[string]backend.HostTool,
	calls []*genai.FunctionCall, obs backend.Observer) (parts []*genai.Part, unfinished []string) {
	out := make([][]*genai.Part, len(calls))
	cut := make([]bool, len(calls))
	var wg sync.WaitGroup
	for i, fc := range calls {
		ht, ok := tools[fc.Name]
		if !ok {
			why := fmt.Sprintf("Tool %q not found: it is none of the tools this "+
				"server declared. Tools must use the exact names that are declared.", fc.Name)
			if ex, ok := b.tools.(backend.ToolExplainer); ok {
				if err := ex.Unavailable(fc.Name); err != nil {
					why = fmt.Sprintf("Tool %q is not available now: %v", fc.Name, err)
				}
			}
			out[i] = []*genai.Part{errorPart(fc, why)}
			continue
		}
		if why := b.permit(ctx, t, ht, fc.Args); why != "" {
			b.log.Info("gemini api: tool call refused", "tool", fc.Name, "session", id, "why", why)
			out[i] = []*genai.Part{errorPart(fc, why)}
			continue
		}
		obs.Activity("calling " + fc.Name)
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			ctx, span := trace.Start(ctx, "tools/call "+fc.Name, trace.Client)
			span.SetAttrs(trace.String("mcp.method.name", "tools/call"), trace.String("gen_ai.tool.name", fc.Name), trace.String("gen_ai.operation.name", "execute_tool"))
			res, err := b.tools.Call(ctx, fc.Name, fc.Args)
			switch {
			case err != nil && ctx.Err() != nil:
				span.Fail("cancelled")
			case err != nil:
				span.Fail("_OTHER")
			case res != nil && res.IsError:
				span.Fail("tool_error")
			}
			span.End()
			b.log.Debug("gemini api: tool call", "tool", fc.Name, "elapsed", time.Since(start), "err", err)
			out[i] = callResultParts(fc, ht.Tool, res, err, model)
			cut[i] = err != nil && ctx.Err() != nil
		}()
	}
	wg.Wait()
	for i, ps := range out {
		parts = append(parts, ps...)
		if cut[i] && !slices.Contains(unfinished, calls[i].Name) {
			unfinished = append(unfinished, calls[i].Name)
		}
	}
	return parts, unfinished
}

// permit decides whether tool ht may run now, asking the user through
// t.Confirm when neither trust nor the operator's allow-list decides (the
// Confirm remembers the user's "always" answers, for its caller). It
// returns "" when the tool may run, else why not, for Gemini.
func (b *Backend) permit(ctx context.Context, t backend.Turn, ht backend.HostTool, args map[string]any) string {
	if ht.Trusted || b.allowListed(ht) {
		return ""
	}
	how := fmt.Sprintf("the operator may allow it with --allow-mcp-tools=%s.%s (or =%s for every tool of that server), "+
		"or mark the server trusted", ht.Server, ht.Tool, ht.Server)
	if t.Confirm == nil {
		return fmt.Sprintf("The tool %s was not run: its server %q is not trusted, and the user cannot be asked to "+
			"confirm tool calls (their MCP client does not support elicitation); %s.", ht.Name, ht.Server, how)
	}
	d, err := t.Confirm(ctx, backend.ConfirmRequest{Tool: ht, Args: args})
	if err != nil {
		return fmt.Sprintf("The tool %s was not run: the user could not be asked to confirm it (%v); %s.", ht.Name, err, how)
	}
	switch d {
	case backend.AllowOnce, backend.AllowTool, backend.AllowServer:
		return ""
	}
	return fmt.Sprintf("The tool %s was not run: the user declined this call.", ht.Name)
}

// allowListed says whether the operator's --allow-mcp-tools names ht's
// server, or the server and the tool.
func (b *Backend) allowListed(ht backend.HostTool) bool {
	return slices.Contains(b.allowTools, ht.Server) || slices.Contains(b.allowTools, ht.Server+"."+ht.Tool)
}

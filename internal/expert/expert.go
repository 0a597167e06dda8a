// Package expert offers the five expert tools, thinkdeep, analyze,
// codereview, debug and precommit: each gives Gemini a role, the caller's
// arguments and the project files they name, runs one turn in a new or a
// continued session through the pipeline every tool shares
// (conversation.Service.Do, Deps.Turns), and answers in the format of their
// specification (the answer, then
// ## Metadata, ## Files Processed and ## Continuation ID). Failures are
// JSON-RPC errors in the specification's categories (see errors.go). Reading the
// files is not this package's: the server plugs its file context in
// through Deps.Files.
package expert

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/attach"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/render"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
)

// FileContext is the file context the expert tools read (a
// *filectx.Service, shared with chat): Gather reads a turn's files,
// skipping what the conversation was already sent, Record notes what a
// turn sent, Changes reads precommit's changes. Its errors are
// *filectx.Error, in the category they name.
type FileContext interface {
	Gather(ctx context.Context, sessionID string, entries []string) (*filectx.Files, error)
	Record(ctx context.Context, sessionID string, f *filectx.Files) error
	Changes(ctx context.Context, path string, staged, unstaged bool, maxTokens func() int) (*filectx.ChangeSet, error)
}

// Turns is the turn pipeline (*conversation.Service), which runs the
// expert tools' turns as it runs chat's: the same sessions, the same
// confirmations of downstream tools, the same paging.
type Turns interface {
	Do(ctx context.Context, r conversation.Request) (*mcp.CallToolResult, error)
}

// Deps is what the expert tools need.
type Deps struct {
	Turns Turns
	// ProjectRoot is where new sessions run and files are read from; ""
	// means the server's directory.
	ProjectRoot string
	// Files reads the file context; nil means this server has none, and
	// a call that names files fails with a system error.
	Files FileContext
	// CallTimeout bounds a call, file context and Gemini's turn together
	// (the specification: 300 s); 0 means no bound beyond the backend's own.
	CallTimeout time.Duration
	// MaxArgBytes bounds each text argument; 0 means no bound.
	MaxArgBytes int
	// InputLimit is how many tokens the backend's model takes in, which
	// precommit's changes are cut to fit with the rest of the prompt; nil
	// or 0 means DefaultInputLimit.
	InputLimit func(ctx context.Context) int
	// FileSearch is the file_search argument's File Search; nil, or one
	// without an Index, on a backend that has none.
	FileSearch *attach.Service
	Log        *slog.Logger
}

// Name is the tool's name.
func (t *Tool) Name() string { return t.name }

// Add adds the tool to s.
func (t *Tool) Add(s *mcp.Server, d *Deps) { s.AddTool(t.tool(), d.handler(t)) }

// AddPrompt adds the tool's MCP prompt, of the same name, to s.
func (t *Tool) AddPrompt(s *mcp.Server) { s.AddPrompt(t.prompt(), t.getPrompt) }

func (d *Deps) log() *slog.Logger {
	if d.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Log
}

// handler is the tool's raw handler: it validates the arguments itself
// (see decodeArgs) and returns every failure as a JSON-RPC error.
func (d *Deps) handler(t *Tool) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := d.call(ctx, req, t)
		if err != nil {
			d.log().Info("expert tool failed", "tool", t.name, "err", err)
			return nil, toolerr.WireError(err)
		}
		return res, nil
	}
}

// errCallTimeout is the cause of a call stopped by Deps.CallTimeout.
var errCallTimeout = errors.New("call timeout")

func (d *Deps) call(ctx context.Context, req *mcp.CallToolRequest, t *Tool) (res *mcp.CallToolResult, err error) {
	var raw json.RawMessage
	if req != nil && req.Params != nil {
		raw = req.Params.Arguments
	}
	in := t.input()
	if err := t.decodeArgs(raw, in, d.MaxArgBytes); err != nil {
		return nil, err
	}
	if d.CallTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, d.CallTimeout, errCallTimeout)
		defer cancel()
		defer func() {
			// An index of file_search stopped at the limit says so itself:
			// the next call carries it on.
			if err != nil && errors.Is(context.Cause(ctx), errCallTimeout) && !errors.Is(err, attach.ErrLimit) {
				err = &toolerr.Error{Category: toolerr.ToolFailure, Err: err, Msg: fmt.Sprintf("the call took longer than this server's limit of %s per call, and was stopped: "+
					"ask a narrower question or name fewer files, or ask the server's operator to raise the limit", d.CallTimeout)}
			}
		}()
	}
	if f, ok := in.(retriever); ok {
		if err := d.FileSearch.Check(f.fileSearch()); err != nil {
			return nil, err
		}
	}
	r := d.request(req, t, in)
	if b, ok := in.(backgrounder); ok {
		// The job keeps what the handler would have returned: the
		// result, or the JSON-RPC error. The call's timeout does not
		// bound a job, which runs apart from the call. A call without
		// background may become a job too, past --job-after; a tool
		// without the argument (an output schema) never does.
		r.Background = b.background()
		r.Finish = func(res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) {
			if err = d.turnOutcome(err, in, r); err != nil {
				d.log().Info("expert tool failed", "tool", t.name, "err", err)
				return nil, toolerr.WireError(err)
			}
			return res, nil
		}
	}
	res, err = d.Turns.Do(ctx, r)
	if err = d.turnOutcome(err, in, r); err != nil {
		return nil, err
	}
	return res, nil
}

// turnOutcome is the tool's error of the pipeline's err (nil for nil).
func (d *Deps) turnOutcome(err error, in input, r conversation.Request) error {
	var te *conversation.TargetError
	switch {
	case errors.As(err, &te) && in.common().ContinuationID != "":
		if cat, _ := toolerr.Classify(te.Err); cat == toolerr.System {
			return te.Err
		}
		return &toolerr.Error{Category: toolerr.Validation, Field: "continuation_id", Msg: te.Err.Error(), Err: te.Err}
	case errors.As(err, &te):
		return toolerr.SystemError(fmt.Sprintf("the project root cannot be used (%v): the server's operator should set --project-root to an existing directory", te.Err), te.Err)
	case err != nil:
		return turnError(err, r.Turn.Builtins)
	}
	return nil
}

// request is the tool's turn, from its input in: a new session in the
// project root or the thread continuation_id names, the tool's role and
// tuning, the prompt of its arguments and the material it gathers, and
// its renderer.
func (d *Deps) request(req *mcp.CallToolRequest, t *Tool, in input) conversation.Request {
	common := in.common()
	var builtins backend.Builtins
	if s, ok := in.(searcher); ok {
		builtins.GoogleSearch = s.search()
	}
	if s, ok := in.(coder); ok {
		builtins.CodeExecution = s.sandbox()
	}
	r := conversation.Request{Call: req, Cwd: d.ProjectRoot, Title: t.name + ": " + in.headline(),
		Turn: backend.Turn{SystemPrompt: t.role, ThinkingMode: common.ThinkingMode, Temperature: common.Temperature, Builtins: builtins}}
	if common.ContinuationID != "" {
		// The role is this tool's, whichever tool started the thread.
		r.Continue, r.Session, r.Cwd = true, common.ContinuationID, ""
	}
	var m *material
	var search *attach.Use
	r.Gather = func(ctx context.Context, session string) (conversation.Material, error) {
		var err error
		if m, err = in.gather(ctx, d, session); err != nil {
			return conversation.Material{}, err
		}
		if f, ok := in.(retriever); ok {
			// What file_search asks is decided here; the index itself is
			// the turn's (a background call's job does it).
			search = d.FileSearch.Plan(f.fileSearch(), d.ProjectRoot, attach.Overflowed(m.files) || m.cut != "")
			if search.Indexes() {
				m.preface += searchNoteOf(m)
			}
		}
		g := conversation.Material{Media: m.files.Media}
		if search != nil {
			g.Prepare = func(ctx context.Context) ([]string, error) {
				if err := search.Run(ctx); err != nil {
					return nil, err
				}
				return search.Stores(), nil
			}
		}
		g.Prompt, g.ContextLen = t.userPrompt(in, m)
		if d.Files != nil && m.record {
			g.Sent, g.Record = m.files, d.Files.Record
		}
		return g, nil
	}
	r.Render = func(ctx context.Context, o conversation.Outcome) (*mcp.CallToolResult, error) {
		out := &output{
			tool: t.name, answer: o.Answer, thinkingMode: common.ThinkingMode, temperature: common.Temperature,
			processed: m.files.Processed, skipped: m.files.Skipped, elapsed: o.Elapsed, secrets: m.secrets, cut: m.cut,
		}
		// A long answer is paged as chat's are: the first page, then the
		// sections; chat-page serves the rest.
		out.page, out.pageMeta, _ = o.Paged(ctx)
		res := out.result()
		if t.structured != nil {
			res.StructuredContent = t.structured(out)
		}
		search.Render(res, o.Answer)
		render.AddUnsaved(res, o.Unsaved)
		return res, nil
	}
	return r
}

// searchNoteOf is the prompt's section that tells Gemini, in a turn with
// the project root's File Search store, what it holds beside what m sends.
func searchNoteOf(m *material) string {
	if m.heading == changesHeading {
		return changesSearchNote
	}
	return searchNote
}

// changesSearchNote is precommit's searchNote: the changes are sent, the
// code around them is in the store.
const changesSearchNote = "## Project search\nThe whole project root, with the changes above, is indexed in your File Search tool: " +
	"search it for the code the changes touch, call or are called by, and their tests, when the changes alone do not show it, and name the files you draw on.\n\n"

// searchNote tells Gemini, in a turn with the project root's File Search
// store, that the files sent are not all there is.
const searchNote = "## Project search\nThe files above are those that fit in this request. The whole project root is indexed " +
	"in your File Search tool: search it for the code the question needs that is not above, and name the files you draw on.\n\n"

// userPrompt is the turn's prompt: the files the tool gathered, then the
// caller's arguments under their labels (in.sections), in the order of
// the schema, then the rest of what the tool gathered; and the length of
// the files' section, a stable context the API backend may cache
// (Turn.ContextLen).
func (t *Tool) userPrompt(in input, m *material) (string, int) {
	var b strings.Builder
	if m.files.Text != "" {
		fmt.Fprintf(&b, "## %s\n%s\n\n", m.heading, strings.TrimRight(m.files.Text, "\n"))
	}
	ctxLen := b.Len()
	for _, s := range in.sections() {
		if strings.TrimSpace(s.text) == "" {
			continue
		}
		fmt.Fprintf(&b, "## %s\n%s\n\n", s.label, s.text)
	}
	b.WriteString(m.preface)
	if len(m.secrets) > 0 {
		fmt.Fprintf(&b, "## Secrets found by the server's scan\nThe changes add these credentials (masked here and in the diff). "+
			"They make the verdict NO-GO: say how to remove them.\n- %s\n\n", strings.Join(m.secrets, "\n- "))
	}
	p := strings.TrimRight(b.String(), "\n")
	if ctxLen >= len(p) {
		ctxLen = 0 // nothing after the files
	}
	return p, ctxLen
}

// output is a successful call, formatted as the specification's
// ToolOutput.to_mcp_response.
type output struct {
	tool               string
	answer             *backend.Answer
	thinkingMode       string
	temperature        *float64
	processed, skipped []filectx.FileNote
	elapsed            time.Duration
	secrets            []string // precommit: the secrets found, masked
	cut                string   // precommit: what of the changes was not sent
	// page is the answer's first page when it is paged ("" when it is
	// not), with its note; pageMeta the paging's facts for _meta.
	page     string
	pageMeta mcp.Meta
}

// metadata is the ## Metadata section's entries, in order.
func (o *output) metadata() [][2]string {
	m := [][2]string{{"tool", o.tool}, {"thinking_mode", o.thinkingMode}}
	if o.temperature != nil {
		m = append(m, [2]string{"temperature", fmt.Sprint(*o.temperature)})
	}
	if u := o.answer.Usage; u != nil {
		m = append(m, [2]string{"tokens_used", fmt.Sprint(tokensUsed(u))},
			[2]string{"thinking_tokens", fmt.Sprint(u.ThinkingTokens)})
	} else {
		m = append(m, [2]string{"tokens_used", "not reported by this backend"})
	}
	m = append(m, [2]string{"response_time", fmt.Sprintf("%.1fs", o.elapsed.Seconds())})
	for _, n := range o.answer.NotApplied {
		m = append(m, [2]string{"not_applied", n})
	}
	if o.answer.Incomplete != "" {
		m = append(m, [2]string{"incomplete", o.answer.Incomplete})
	}
	return m
}

// text is the result's text: the answer, then the sections, joined by
// newlines as the specification joins them. Files left out get a section of their
// own after the processed ones, so that the model knows what Gemini did
// not see.
func (o *output) text() string {
	answer := o.answer.Text
	if o.page != "" {
		answer = o.page
	}
	parts := []string{answer, "\n## Metadata"}
	for _, kv := range o.metadata() {
		parts = append(parts, "- "+kv[0]+": "+kv[1])
	}
	if len(o.processed) > 0 {
		parts = append(parts, "\n## Files Processed")
		for _, f := range o.processed {
			line := "- " + msg.QuoteName(f.Path)
			if f.Reason != "" {
				line += " (" + f.Reason + ")"
			}
			parts = append(parts, line)
		}
	}
	if len(o.skipped) > 0 {
		parts = append(parts, "\n## Files Skipped")
		for _, f := range o.skipped {
			parts = append(parts, "- "+msg.QuoteName(f.Path)+": "+f.Reason)
		}
	}
	if o.cut != "" {
		parts = append(parts, "\n## Changes Not Reviewed", "Only part of the changes was sent to Gemini: "+o.cut+".")
	}
	if len(o.secrets) > 0 {
		parts = append(parts, "\n## Secrets Found")
		for _, f := range o.secrets {
			parts = append(parts, "- "+f)
		}
		parts = append(parts, "\n## Verdict: NO-GO", "The changes add secrets (listed above, masked): remove them from the changes, "+
			"and rotate any that were real, before committing. This verdict is the server's, whatever the review above says.")
	}
	if o.answer.SessionID != "" {
		parts = append(parts, "\n## Continuation ID: "+o.answer.SessionID)
	}
	return strings.Join(parts, "\n")
}

// result is the tool result: the text, and the same facts in _meta.
func (o *output) result() *mcp.CallToolResult {
	meta := mcp.Meta{
		"tool":           o.tool,
		"thinkingMode":   o.thinkingMode,
		"responseTimeMs": o.elapsed.Milliseconds(),
		"filesProcessed": notes(o.processed),
		"filesSkipped":   notes(o.skipped),
	}
	if o.answer.SessionID != "" {
		meta["continuationId"] = o.answer.SessionID
		// The same id under the name chat's results use, so that a client
		// can go on with chat-reply.
		meta["sessionId"] = o.answer.SessionID
	}
	if o.temperature != nil {
		meta["temperature"] = *o.temperature
	}
	if o.answer.Model != "" {
		meta["model"] = o.answer.Model
	}
	if u := o.answer.Usage; u != nil {
		meta["usage"] = u
		meta["tokensUsed"] = tokensUsed(u)
		meta["thinkingTokens"] = u.ThinkingTokens
	}
	if len(o.answer.NotApplied) > 0 {
		meta["notApplied"] = o.answer.NotApplied
	}
	if o.answer.Incomplete != "" {
		meta["incomplete"] = true
	}
	if o.answer.FinishReason != "" {
		meta["finishReason"] = o.answer.FinishReason
	}
	for k, v := range o.pageMeta {
		meta[k] = v
	}
	if o.cut != "" {
		meta["changesCut"] = o.cut
	}
	if len(o.secrets) > 0 {
		meta["secrets"] = o.secrets
		meta["verdict"] = "no-go"
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: o.text()}}, Meta: meta}
	render.AddBuiltins(res, o.answer)
	render.AddFallback(res, o.answer)
	render.AddInteraction(res, o.answer)
	return res
}

// notes is never nil, so that _meta always has the lists.
func notes(n []filectx.FileNote) []filectx.FileNote {
	if n == nil {
		return []filectx.FileNote{}
	}
	return n
}

// tokensUsed is what a turn was billed in tokens: its prompt, output,
// thinking, and what the API's tools fed the model.
func tokensUsed(u *backend.Usage) int {
	return u.PromptTokens + u.OutputTokens + u.ThinkingTokens + u.ToolUsePromptTokens
}

// Package tools defines the chat tools: chat and chat-reply, chat-page
// for answers too long for one result, and sessions to find a
// conversation again. Each is added to a server by its own function
// (AddChat, AddReply, AddPage, AddSessions), which the server's tool
// registry (internal/server) calls. Their handlers read
// the arguments and the request (who calls, how its user may be asked to
// confirm a downstream tool), and leave the turn to the pipeline they
// share with the expert tools (internal/conversation).
package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/validate"
)

// Deps is what the chat tools need. It is complete when the tools are
// added to a server, and never changed after.
type Deps struct {
	// Conv is the turn pipeline, shared with the expert tools.
	Conv           *conversation.Service
	MaxPromptBytes int
	// Files reads chat's and chat-reply's files argument; nil means the
	// server has no file context, and a call that names files fails.
	Files FileContext
	// ConfirmWait is how long a turn waits for a 2026-07-28 client to come
	// back with its user's answer to a tool confirmation (see confirm.go);
	// 0 means DefaultConfirmWait.
	ConfirmWait time.Duration
	pending     pendingTurns
	grants      grants
}

// AddChat adds chat to s.
func AddChat(s *mcp.Server, d *Deps) {
	s.AddTool(chatTool(d.Conv.SessionIDInText()), handle(d.chat))
}

// AddReply adds chat-reply to s.
func AddReply(s *mcp.Server, d *Deps) {
	s.AddTool(replyTool(), handle(d.chatReply))
}

// The input schemas are generated from the input structs below (their json
// names, their jsonschema tags as descriptions, required unless
// omitempty), so that a field is written once. inputSchema then drops what
// the Gemini CLI's schema sanitizer strips (additionalProperties, $schema):
// unknown arguments are refused by decodeArgs instead, from the same
// struct.
func chatTool(idInText bool) *mcp.Tool {
	where := "_meta.sessionId"
	if idInText {
		where = "sessionId (in _meta, and in a line 'sessionId: …' after the answer)"
	}
	return &mcp.Tool{
		Name: "chat",
		Description: "Start a new conversation with Google Gemini (through the Gemini CLI) and return its answer. " +
			"Use it for a second opinion, a review, research or a long-context question. " +
			"The result's " + where + " identifies the conversation: pass it to chat-reply to continue it with its history.",
		InputSchema: inputTypeOf[ChatInput]().sc.CloneSchemas(),
		Annotations: &mcp.ToolAnnotations{Title: "Chat with Gemini", OpenWorldHint: ptr(true)},
	}
}

func replyTool() *mcp.Tool {
	return &mcp.Tool{
		Name: "chat-reply",
		Description: "Continue an existing Gemini conversation: Gemini sees the session's earlier turns. " +
			"Pass the sessionId from an earlier chat or chat-reply result. Without sessionId it continues this client's most recent session " +
			"(in cwd, when cwd is given).",
		InputSchema: inputTypeOf[ReplyInput]().sc.CloneSchemas(),
		Annotations: &mcp.ToolAnnotations{Title: "Continue a Gemini chat", OpenWorldHint: ptr(true)},
	}
}

// inputSchema generates the input schema of a tool from its input struct.
// The structs are this package's own, so an error is a programming error,
// which every test that lists the tools would catch.
func inputSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("tools: the input schema of %T: %v", *new(T), err))
	}
	s.AdditionalProperties = nil
	s.Schema = ""
	// A nil slice makes ["null", "array"], which the Gemini CLI's schema
	// sanitizer does not take: an optional list is an array that may be
	// left out.
	for _, p := range s.Properties {
		if len(p.Types) == 2 && p.Types[0] == "null" {
			p.Type, p.Types = p.Types[1], nil
		}
		// An object argument (response_schema) is any object: the
		// generator's additionalProperties, which the sanitizer strips,
		// says no more.
		p.AdditionalProperties = nil
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// ChatInput is chat's arguments; its tags are chat's input schema.
type ChatInput struct {
	Prompt         string   `json:"prompt" jsonschema:"The prompt that starts the session."`
	Model          string   `json:"model,omitempty" jsonschema:"Optional: the Gemini model to use (e.g. 'gemini-3-pro', 'gemini-3-flash'), or an alias: 'pro', 'flash' or 'flash-lite', the newest stable model of that family (the model that answered is in _meta.model on the Gemini API backend). Omit to use the Gemini CLI's default."`
	SystemPrompt   string   `json:"systemPrompt,omitempty" jsonschema:"Optional: a system prompt that sets the assistant's behaviour for this call. It replaces the Gemini CLI's built-in system prompt."`
	Cwd            string   `json:"cwd,omitempty" jsonschema:"Optional: the working directory the Gemini CLI runs in (absolute, or relative to the server's directory). Gemini can read files there. Sessions belong to the directory they were started in."`
	Files          []string `json:"files,omitempty" jsonschema:"Optional: files or directories inside the project root to send with the prompt, with line numbers (as the expert tools do)."`
	ContinuationID string   `json:"continuation_id,omitempty" jsonschema:"Optional: continue this thread (a continuation_id or sessionId of an earlier result of any tool) instead of starting a new one."`
	Tuning
	Grounding
	ResponseSchema map[string]any `json:"response_schema,omitempty" jsonschema:"Optional: a JSON Schema (draft 2020-12) of a JSON object that the answer must be (Gemini API backend only). The answer is checked against it and returned as structuredContent, and as JSON text; an answer that does not satisfy it is an error that keeps the answer's text."`
}

// ReplyInput is chat-reply's arguments; its tags are chat-reply's input
// schema.
type ReplyInput struct {
	Prompt         string   `json:"prompt" jsonschema:"The prompt that continues the conversation."`
	SessionID      string   `json:"sessionId,omitempty" jsonschema:"The session to continue: a sessionId from an earlier result, \"latest\", or a Gemini CLI session index. Omit it to continue this client's most recent session."`
	Model          string   `json:"model,omitempty" jsonschema:"Optional: the Gemini model to use for this turn (e.g. 'gemini-3-pro', 'gemini-3-flash'), or an alias: 'pro', 'flash' or 'flash-lite'."`
	SystemPrompt   string   `json:"systemPrompt,omitempty" jsonschema:"Optional: a system prompt that sets the assistant's behaviour for this call. It replaces the Gemini CLI's built-in system prompt. With the Gemini API backend, omitting it keeps the system prompt the session started with."`
	Cwd            string   `json:"cwd,omitempty" jsonschema:"Optional: the working directory of the session. A session recorded by this server runs in its own directory when cwd is omitted."`
	Files          []string `json:"files,omitempty" jsonschema:"Optional: files or directories inside the project root to send with the prompt, with line numbers; files this thread was already sent are not sent again."`
	ContinuationID string   `json:"continuation_id,omitempty" jsonschema:"Optional: another name for sessionId, e.g. the continuation_id of an expert tool's result."`
	Tuning
	Grounding
}

func (d *Deps) chat(ctx context.Context, req *mcp.CallToolRequest, in ChatInput) (*mcp.CallToolResult, any, error) {
	if err := d.checkCommon(in.Prompt, in.Model, in.SystemPrompt); err != nil {
		return conversation.Failure(err), nil, nil
	}
	call := backend.Turn{Prompt: in.Prompt, Model: in.Model, SystemPrompt: in.SystemPrompt}
	in.Tuning.apply(&call)
	if err := in.Grounding.apply(&call); err != nil {
		return conversation.Failure(err), nil, nil
	}
	if in.ResponseSchema != nil {
		raw, _, err := responseSchema(in.ResponseSchema)
		if err != nil {
			return conversation.Failure(err), nil, nil
		}
		call.ResponseSchema = raw
	}
	c := d.Conv.CallOf(ctx, req)
	if in.ContinuationID != "" {
		// The expert tools' specification: any tool given a continuation id continues that
		// thread, as chat-reply does. A blank one is refused there.
		if err := d.Conv.Target(ctx, &call, in.ContinuationID, in.Cwd, c.Who); err != nil {
			return conversation.Failure(err), nil, nil
		}
	} else {
		dir, err := d.Conv.ResolveDir(in.Cwd)
		if err != nil {
			return conversation.Failure(err), nil, nil
		}
		call.Dir = dir
	}
	files, err := d.withFiles(ctx, &call, in.Files)
	if err != nil {
		return conversation.Failure(err), nil, nil
	}
	out := d.run(ctx, req, c, call, d.chatTurn(c))
	d.finishFiles(ctx, files, out)
	return out.res, nil, nil
}

func (d *Deps) chatReply(ctx context.Context, req *mcp.CallToolRequest, in ReplyInput) (*mcp.CallToolResult, any, error) {
	if err := d.checkCommon(in.Prompt, in.Model, in.SystemPrompt); err != nil {
		return conversation.Failure(err), nil, nil
	}
	id, err := continuationID(in.SessionID, in.ContinuationID)
	if err != nil {
		return conversation.Failure(err), nil, nil
	}
	call := backend.Turn{Prompt: in.Prompt, Model: in.Model, SystemPrompt: in.SystemPrompt}
	in.Tuning.apply(&call)
	if err := in.Grounding.apply(&call); err != nil {
		return conversation.Failure(err), nil, nil
	}
	c := d.Conv.CallOf(ctx, req)
	if err := d.Conv.Target(ctx, &call, id, in.Cwd, c.Who); err != nil {
		return conversation.Failure(err), nil, nil
	}
	files, err := d.withFiles(ctx, &call, in.Files)
	if err != nil {
		return conversation.Failure(err), nil, nil
	}
	out := d.run(ctx, req, c, call, d.chatTurn(c))
	d.finishFiles(ctx, files, out)
	return out.res, nil, nil
}

func (d *Deps) checkCommon(prompt, model, systemPrompt string) error {
	if strings.TrimSpace(prompt) == "" {
		return errors.New("prompt is empty")
	}
	if err := validate.Text("prompt", prompt, d.MaxPromptBytes); err != nil {
		return err
	}
	if err := validate.Text("systemPrompt", systemPrompt, d.MaxPromptBytes); err != nil {
		return err
	}
	if model != "" {
		return validate.Model(model)
	}
	return nil
}

// outcome is a turn's tool result and the session its answer belongs to
// ("" when there is none: a failure, a question to the client); err,
// when set, is the failure, for the tools that report it otherwise than
// as chat's error results (Ask).
type outcome struct {
	res     *mcp.CallToolResult
	session string
	err     error
}

// failed is the outcome of a failure.
func failed(err error) outcome { return outcome{res: conversation.Failure(err), err: err} }

// turnFunc runs a turn, its Confirm set, on a ctx Bind made, and builds
// its outcome.
type turnFunc func(ctx context.Context, call backend.Turn) outcome

// chatTurn is chat's and chat-reply's turnFunc.
func (d *Deps) chatTurn(c conversation.Call) turnFunc {
	return func(ctx context.Context, call backend.Turn) outcome { return d.runTurn(ctx, c, call) }
}

// Ask runs a turn of another tool (the expert tools) the way chat runs
// its own: the turn runs on a ctx ended with the server and the call's
// HTTP request (conversation.Service.Bind), and before Gemini runs an
// untrusted downstream tool the user of the client that made req is
// asked, through elicitation or, from protocol 2026-07-28 on, an input
// request in the result (a later call that answers it, with the same
// request state, gets turn's result), with the grants of chat's users.
// turn runs the turn (conversation.Service.Run) and builds the tool
// result; its error, or why the call could not go on, is returned.
func (d *Deps) Ask(ctx context.Context, req *mcp.CallToolRequest, c conversation.Call, call backend.Turn,
	turn func(ctx context.Context, call backend.Turn) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	out := d.run(ctx, req, c, call, func(ctx context.Context, call backend.Turn) outcome {
		res, err := turn(ctx, call)
		return outcome{res: res, err: err}
	})
	if out.err != nil {
		return nil, out.err
	}
	return out.res, nil
}

// run makes the call c with turn, which records the session and builds
// the tool result. req is the call's request, for what only the handler
// reads of it: how its client may be asked to confirm a downstream tool.
func (d *Deps) run(ctx context.Context, req *mcp.CallToolRequest, c conversation.Call, call backend.Turn, turn turnFunc) outcome {
	ctx, cancel := d.Conv.Bind(ctx, c)
	defer cancel()
	if call.Session != "" && req.Params.RequestState == "" {
		if n := d.pending.supersede(c.Who.Key(), call.Session); n > 0 {
			d.Conv.Log().Info("a new call on the session withdrew the tool confirmation left unanswered", "session", call.Session)
		}
	}
	switch {
	case !canElicit(req):
		// Untrusted downstream tools run only if the operator allows them.
	case usesMRTR(req):
		return d.runMRTR(ctx, req, c, call, turn)
	default:
		call.Confirm = d.grants.confirmFor(c.Who.Caller, elicitConfirm(req, c.Who.Caller))
	}
	return turn(ctx, call)
}

// runTurn runs the turn and builds the tool result.
func (d *Deps) runTurn(ctx context.Context, c conversation.Call, call backend.Turn) outcome {
	res, unsaved, err := d.Conv.Run(ctx, c, call, call.Prompt[call.ContextLen:])
	switch {
	case errors.Is(err, conversation.ErrWaitCancelled):
		return failed(fmt.Errorf("the call was cancelled while waiting for an earlier call on session %s", call.Session))
	case err != nil:
		return failed(err)
	}
	var structured map[string]any
	if len(call.ResponseSchema) > 0 && res.Incomplete == "" {
		if structured, err = checkStructured(ctx, res, call.ResponseSchema); err != nil {
			return failed(err)
		}
	}
	out := d.Conv.Result(ctx, res, unsaved)
	if structured != nil {
		out.StructuredContent = structured
	}
	return outcome{res: out, session: res.SessionID}
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// Package tools defines the chat tools: chat and chat-reply, chat-page
// for answers too long for one result, and sessions to find a
// conversation again. Each is added to a server by its own function
// (AddChat, AddReply, AddPage, AddSessions), which the server's tool
// registry (internal/server) calls. Their handlers read the arguments,
// build the turn's conversation.Request from them (chatRequest,
// replyRequest), and leave the turn to the pipeline they share with the
// expert tools (internal/conversation's Service.Do), which calls back to
// read their files and render the answer (files.go, result.go).
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/attach"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
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
	// ProjectRoot is where the image tool saves images (save_to), ""
	// for nowhere; Forbidden are paths under it where nothing is saved
	// (the server's own state).
	ProjectRoot string
	Forbidden   []string
	// Jobs keeps the background jobs the job tool reports on; nil means
	// the server runs none.
	Jobs jobs.Store
	// Research reaches the Interactions API for the research tool; nil
	// on a backend that has none (the Gemini CLI's), where research is
	// refused. ResearchPoll is the time between its polls (interact's
	// default when zero); ResearchLimit how long after its job was
	// started an interaction is given up (MaxResearchTime when zero).
	Research      func() (Researcher, error)
	ResearchPoll  time.Duration
	ResearchLimit time.Duration
	// FileSearch is chat's and chat-reply's file_search, its index bound
	// by --timeout; nil, or one without an Index, on a backend that has
	// none.
	FileSearch *attach.Service
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
	FileSearch     string   `json:"file_search,omitempty"`
	ContinuationID string   `json:"continuation_id,omitempty" jsonschema:"Optional: continue this thread (a continuation_id or sessionId of an earlier result of any tool) instead of starting a new one."`
	Tuning
	Grounding
	Background     bool           `json:"background,omitempty" jsonschema:"Optional: run the call as a background job: the result names the job at once, and the job tool returns its progress and, once done, this call's result. For long calls a client would give up on."`
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
	FileSearch     string   `json:"file_search,omitempty"`
	ContinuationID string   `json:"continuation_id,omitempty" jsonschema:"Optional: another name for sessionId, e.g. the continuation_id of an expert tool's result."`
	Tuning
	Grounding
	Background bool `json:"background,omitempty" jsonschema:"Optional: run the call as a background job: the result names the job at once, and the job tool returns its progress and, once done, this call's result. For long calls a client would give up on."`
}

func (d *Deps) chat(ctx context.Context, req *mcp.CallToolRequest, in ChatInput) (*mcp.CallToolResult, any, error) {
	if err := d.checkCommon(in.Prompt, in.Model, in.SystemPrompt); err != nil {
		return toolerr.Failure(err), nil, nil
	}
	if err := d.FileSearch.Check(in.FileSearch); err != nil {
		return toolerr.Failure(err), nil, nil
	}
	r, err := d.chatRequest(req, in)
	if err != nil {
		return toolerr.Failure(err), nil, nil
	}
	return d.do(ctx, r), nil, nil
}

// extendSchema gives chat's schema the tuning's constraints and
// file_search's values and description (no default, which the SDK would
// write into the arguments, as for chat's other options).
func (ChatInput) extendSchema(s *jsonschema.Schema) {
	tuneSchema(s)
	fileSearchSchema(s)
}

// extendSchema gives chat-reply's schema what chat's has.
func (ReplyInput) extendSchema(s *jsonschema.Schema) {
	tuneSchema(s)
	fileSearchSchema(s)
}

// fileSearchSchema gives file_search's property of s its values and
// description.
func fileSearchSchema(s *jsonschema.Schema) {
	p := s.Properties[attach.Field]
	for _, v := range attach.Modes {
		p.Enum = append(p.Enum, v)
	}
	p.Description = attach.Description
}

// chatRequest is chat's turn, from its input.
func (d *Deps) chatRequest(req *mcp.CallToolRequest, in ChatInput) (conversation.Request, error) {
	urls, err := in.Grounding.urls()
	if err != nil {
		return conversation.Request{}, err
	}
	var schema json.RawMessage
	if in.ResponseSchema != nil {
		if schema, _, err = responseSchema(in.ResponseSchema); err != nil {
			return conversation.Request{}, err
		}
	}
	r := conversation.Request{Call: req, Cwd: in.Cwd, Turn: backend.Turn{Prompt: in.Prompt, Model: in.Model, SystemPrompt: in.SystemPrompt,
		Temperature: in.Temperature, ThinkingMode: in.ThinkingMode, IncludeThoughts: in.IncludeThoughts,
		Builtins: backend.Builtins{GoogleSearch: in.GoogleSearch, URLs: urls, CodeExecution: in.CodeExecution, ResponseSchema: schema}}}
	if in.ContinuationID != "" {
		// The expert tools' specification: any tool given a continuation id continues that
		// thread, as chat-reply does. A blank one is refused there.
		r.Continue, r.Session = true, in.ContinuationID
	}
	d.withFiles(&r, in.Prompt, in.Files, schema, in.FileSearch)
	d.inBackground(&r, in.Background)
	return r, nil
}

func (d *Deps) chatReply(ctx context.Context, req *mcp.CallToolRequest, in ReplyInput) (*mcp.CallToolResult, any, error) {
	if err := d.checkCommon(in.Prompt, in.Model, in.SystemPrompt); err != nil {
		return toolerr.Failure(err), nil, nil
	}
	if err := d.FileSearch.Check(in.FileSearch); err != nil {
		return toolerr.Failure(err), nil, nil
	}
	r, err := d.replyRequest(req, in)
	if err != nil {
		return toolerr.Failure(err), nil, nil
	}
	return d.do(ctx, r), nil, nil
}

// replyRequest is chat-reply's turn, from its input.
func (d *Deps) replyRequest(req *mcp.CallToolRequest, in ReplyInput) (conversation.Request, error) {
	id, err := continuationID(in.SessionID, in.ContinuationID)
	if err != nil {
		return conversation.Request{}, err
	}
	urls, err := in.Grounding.urls()
	if err != nil {
		return conversation.Request{}, err
	}
	r := conversation.Request{Call: req, Continue: true, Session: id, Cwd: in.Cwd, Turn: backend.Turn{Prompt: in.Prompt, Model: in.Model,
		SystemPrompt: in.SystemPrompt, Temperature: in.Temperature, ThinkingMode: in.ThinkingMode, IncludeThoughts: in.IncludeThoughts,
		Builtins: backend.Builtins{GoogleSearch: in.GoogleSearch, URLs: urls, CodeExecution: in.CodeExecution}}}
	d.withFiles(&r, in.Prompt, in.Files, nil, in.FileSearch)
	d.inBackground(&r, in.Background)
	return r, nil
}

// do runs r through the pipeline, its failure as chat's error result.
func (d *Deps) do(ctx context.Context, r conversation.Request) *mcp.CallToolResult {
	return failure(d.Conv.Do(ctx, r))
}

// inBackground makes r a background turn when background is set: its
// job keeps the result do would have returned. A call without it may
// become a job too, past --job-after (see conversation.Request.Finish).
func (d *Deps) inBackground(r *conversation.Request, background bool) {
	r.Background = background
	r.Finish = func(res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) { return failure(res, err), nil }
}

// failure is the result of a turn that ended with res or err: a failure
// as chat's error result.
func failure(res *mcp.CallToolResult, err error) *mcp.CallToolResult {
	var wc *conversation.WaitCancelled
	switch {
	case errors.As(err, &wc):
		return toolerr.Failure(fmt.Errorf("the call was cancelled while waiting for an earlier call on session %s", wc.Session))
	case err != nil:
		return toolerr.Failure(err)
	}
	return res
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

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

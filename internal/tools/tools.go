// Package tools defines the MCP tools this server offers: chat and
// chat-reply, chat-page for answers too long for one result, and sessions
// to find a conversation again. Register lists them explicitly.
package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/queue"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/validate"
)

// Deps is what the tools need.
type Deps struct {
	// Backend answers the turns; the tools know nothing of which one it
	// is. Its Close is the server's to call.
	Backend backend.Backend
	// Store keeps the sessions: records, the API backend's turns, answer
	// pages and leases. Its Close is the server's to call.
	Store          session.Store
	DefaultCwd     string // where calls without cwd run
	MaxPromptBytes int
	// Files reads chat's and chat-reply's files argument; nil means the
	// server has no file context, and a call that names files fails.
	Files FilesFunc
	Log   *slog.Logger
	Now   func() time.Time
	// Lifetime, when set, ends every call when it ends: the server is
	// shutting down or its client has gone.
	Lifetime context.Context
	// RequestContext, when set, returns the context of the HTTP request
	// that carries a call (nil if none): the call ends when it ends.
	RequestContext func(*mcp.CallToolRequest) context.Context
	// ProgressInterval is how often progress is reported to clients that
	// ask for it; 0 means config.DefaultProgressInterval.
	ProgressInterval time.Duration
	// MaxAnswerBytes is the largest answer returned in one result; longer
	// ones are paged (see chat-page). 0 means config.DefaultMaxAnswerBytes.
	MaxAnswerBytes int
	// MaxPagedBytes bounds the pages kept of one answer for chat-page
	// (the store bounds all answers together), so that a huge answer cannot
	// fill the store; 0 means config.DefaultMaxOutputBytes: the largest
	// answer a call can return fits.
	MaxPagedBytes int
	// AllowedRoots, when not nil, are the only directories (with their
	// subdirectories) calls may run in, as resolved by ResolveRoots: a
	// remote client must not make any host directory Gemini's workspace.
	AllowedRoots []string
	// Remote, Authenticated (tokens are required), Stateless and
	// ShareSessions describe the HTTP transport; all are false on stdio.
	// Which client a call comes from, and which sessions it may continue,
	// depend on them.
	Remote, Authenticated, Stateless, ShareSessions bool
	// SessionIDInText adds a second text item naming the sessionId to
	// answers: some clients (Claude Code) show the model only the text,
	// never _meta, and a model must be able to continue by id.
	SessionIDInText bool
	// ConfirmWait is how long a turn waits for a 2026-07-28 client to come
	// back with its user's answer to a tool confirmation (see confirm.go);
	// 0 means DefaultConfirmWait.
	ConfirmWait time.Duration
	// MaxTurns caps a conversation (--max-turns); 0 means
	// config.DefaultMaxTurns.
	MaxTurns int
	// Host names this host in the records of CLI sessions, whose files
	// live here; "" means os.Hostname.
	Host    string
	pending pendingTurns
	grants  grants
	// sessions orders calls on the same session within this process, and
	// reports a waiting call's place; the store's lease then orders them
	// across processes. The CLI appends to one session file, so two turns
	// must not run at once.
	sessions queue.Locks
}

// ErrorPrefix starts the text of every failed call, as the tool
// specification requires.
const ErrorPrefix = "Error executing gemini: "

// Register adds chat, chat-reply, chat-page and sessions to s.
func Register(s *mcp.Server, d *Deps) {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.MaxAnswerBytes <= 0 {
		d.MaxAnswerBytes = config.DefaultMaxAnswerBytes
	}
	if d.MaxPagedBytes <= 0 {
		d.MaxPagedBytes = config.DefaultMaxOutputBytes
	}
	if d.MaxTurns <= 0 {
		d.MaxTurns = config.DefaultMaxTurns
	}
	if d.Host == "" {
		// A host without a name records none: its sessions are then
		// not refused elsewhere, as before hosts were recorded.
		d.Host, _ = os.Hostname()
	}
	s.AddReceivingMiddleware(tuningMiddleware)
	mcp.AddTool(s, chatTool(d.SessionIDInText), d.chat)
	mcp.AddTool(s, replyTool(), d.chatReply)
	mcp.AddTool(s, pageTool(), d.chatPage)
	mcp.AddTool(s, sessionsTool(), d.listSessions)
}

// The input schemas are generated from the input structs below (their json
// names, their jsonschema tags as descriptions, required unless
// omitempty), so that a field is written once. inputSchema then drops what
// the Gemini CLI's schema sanitizer strips (additionalProperties, $schema):
// unknown arguments are refused by checkArgs instead, from the same schema.
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
		InputSchema: tuneSchema(inputSchema[ChatInput]()),
		Annotations: &mcp.ToolAnnotations{Title: "Chat with Gemini", OpenWorldHint: ptr(true)},
	}
}

func replyTool() *mcp.Tool {
	return &mcp.Tool{
		Name: "chat-reply",
		Description: "Continue an existing Gemini conversation: Gemini sees the session's earlier turns. " +
			"Pass the sessionId from an earlier chat or chat-reply result. Without sessionId it continues this client's most recent session " +
			"(in cwd, when cwd is given).",
		InputSchema: tuneSchema(inputSchema[ReplyInput]()),
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
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// ChatInput is chat's arguments; its tags are chat's input schema.
type ChatInput struct {
	Prompt         string   `json:"prompt" jsonschema:"The prompt that starts the session."`
	Model          string   `json:"model,omitempty" jsonschema:"Optional: the Gemini model to use (e.g. 'gemini-3-pro', 'gemini-3-flash'). Omit to use the Gemini CLI's default."`
	SystemPrompt   string   `json:"systemPrompt,omitempty" jsonschema:"Optional: a system prompt that sets the assistant's behaviour for this call. It replaces the Gemini CLI's built-in system prompt."`
	Cwd            string   `json:"cwd,omitempty" jsonschema:"Optional: the working directory the Gemini CLI runs in (absolute, or relative to the server's directory). Gemini can read files there. Sessions belong to the directory they were started in."`
	Files          []string `json:"files,omitempty" jsonschema:"Optional: files or directories inside the project root to send with the prompt, with line numbers (as the expert tools do)."`
	ContinuationID string   `json:"continuation_id,omitempty" jsonschema:"Optional: continue this thread (a continuation_id or sessionId of an earlier result of any tool) instead of starting a new one."`
	Tuning
}

// ReplyInput is chat-reply's arguments; its tags are chat-reply's input
// schema.
type ReplyInput struct {
	Prompt         string   `json:"prompt" jsonschema:"The prompt that continues the conversation."`
	SessionID      string   `json:"sessionId,omitempty" jsonschema:"The session to continue: a sessionId from an earlier result, \"latest\", or a Gemini CLI session index. Omit it to continue this client's most recent session."`
	Model          string   `json:"model,omitempty" jsonschema:"Optional: the Gemini model to use for this turn (e.g. 'gemini-3-pro', 'gemini-3-flash')."`
	SystemPrompt   string   `json:"systemPrompt,omitempty" jsonschema:"Optional: a system prompt that sets the assistant's behaviour for this call. It replaces the Gemini CLI's built-in system prompt. With the Gemini API backend, omitting it keeps the system prompt the session started with."`
	Cwd            string   `json:"cwd,omitempty" jsonschema:"Optional: the working directory of the session. A session recorded by this server runs in its own directory when cwd is omitted."`
	Files          []string `json:"files,omitempty" jsonschema:"Optional: files or directories inside the project root to send with the prompt, with line numbers; files this thread was already sent are not sent again."`
	ContinuationID string   `json:"continuation_id,omitempty" jsonschema:"Optional: another name for sessionId (seed 002's), e.g. the continuation_id of an expert tool's result."`
	Tuning
}

func (d *Deps) chat(ctx context.Context, req *mcp.CallToolRequest, in ChatInput) (*mcp.CallToolResult, any, error) {
	if err := checkArgs(req); err != nil {
		return failure(err), nil, nil
	}
	if err := d.checkCommon(in.Prompt, in.Model, in.SystemPrompt); err != nil {
		return failure(err), nil, nil
	}
	call := backend.Turn{Prompt: in.Prompt, Model: in.Model, SystemPrompt: in.SystemPrompt}
	in.apply(&call)
	if in.ContinuationID != "" {
		// Seed 002: any tool given a continuation id continues that
		// thread, as chat-reply does. A blank one is refused there.
		if err := d.target(ctx, &call, in.ContinuationID, in.Cwd, d.clientOf(req)); err != nil {
			return failure(err), nil, nil
		}
	} else {
		dir, err := d.resolveCwd(in.Cwd)
		if err != nil {
			return failure(err), nil, nil
		}
		call.Dir = dir
	}
	files, err := d.withFiles(ctx, &call, in.Files)
	if err != nil {
		return failure(err), nil, nil
	}
	out := d.run(ctx, req, call)
	finishFiles(ctx, files, out)
	return out, nil, nil
}

func (d *Deps) chatReply(ctx context.Context, req *mcp.CallToolRequest, in ReplyInput) (*mcp.CallToolResult, any, error) {
	if err := checkArgs(req); err != nil {
		return failure(err), nil, nil
	}
	if err := d.checkCommon(in.Prompt, in.Model, in.SystemPrompt); err != nil {
		return failure(err), nil, nil
	}
	id, err := continuationID(in.SessionID, in.ContinuationID)
	if err != nil {
		return failure(err), nil, nil
	}
	call := backend.Turn{Prompt: in.Prompt, Model: in.Model, SystemPrompt: in.SystemPrompt}
	in.apply(&call)
	if err := d.target(ctx, &call, id, in.Cwd, d.clientOf(req)); err != nil {
		return failure(err), nil, nil
	}
	files, err := d.withFiles(ctx, &call, in.Files)
	if err != nil {
		return failure(err), nil, nil
	}
	out := d.run(ctx, req, call)
	finishFiles(ctx, files, out)
	return out, nil, nil
}

// target decides which session chat-reply continues and where it runs.
//
//   - A UUID this server recorded runs in its recorded cwd. A cwd that
//     names another directory is an error: the CLI could not find the
//     session there. An API session's cwd binds nothing (see
//     checkRecordedDir): a cwd given with it is checked, then ignored.
//   - A UUID this server never saw needs cwd: it may be a session a person
//     started with the CLI, and only its directory can find it.
//   - "latest" and indexes mean what they mean to the CLI, in cwd (or the
//     server's directory).
//   - No sessionId means the session this server used most recently (in
//     cwd, when cwd is given), so that a person's own interactive session
//     is not continued by surprise. Only when this server has none does it
//     fall back to the CLI's "latest", as the tool specification says.
//
// Over HTTP, several clients share the server: "most recently" means this
// client's most recent, a session started with another bearer token is
// unknown, and with tokens the CLI's own references are refused, unless
// the operator shares sessions (see clients.go).
//
// A recorded session of the CLI backends runs only on the host that
// recorded it: its files are there. A recorded session of the API backend
// keeps the system prompt it started with when the reply gives none: the
// API remembers nothing, so the server sends it again.
func (d *Deps) target(ctx context.Context, call *backend.Turn, sessionID, cwd string, who client) error {
	var dir string
	if cwd != "" {
		var err error
		if dir, err = d.resolveCwd(cwd); err != nil {
			return err
		}
	}
	if sessionID == "" {
		var rec session.Record
		var ok bool
		var err error
		if d.Remote {
			if rec, ok, err = d.latestOf(ctx, who, dir); err != nil {
				return err
			}
		} else if rec, ok, err = session.Latest(ctx, d.Store, d.continuableFilter(session.Filter{Cwd: dir})); err != nil {
			return storeError(err)
		}
		if ok {
			call.Session = rec.ID
			call.Dir = rec.Cwd
			d.keepSystemPrompt(call, rec)
			return d.checkRecordedDir(rec)
		}
		if d.family() != config.FamilyCLI {
			return errors.New("there is no session to continue yet: start one with chat, or pass the sessionId of an earlier result")
		}
		call.Session = "latest"
		if dir == "" {
			var err error
			if dir, err = d.resolveCwd(""); err != nil {
				return err
			}
		}
		call.Dir = dir
		return nil
	}
	ref, err := session.ParseSessionRef(sessionID)
	if err != nil {
		return err
	}
	call.Session = ref.Value
	if ref.Kind != session.RefUUID && d.family() != config.FamilyCLI {
		return fmt.Errorf("sessionId %q names a Gemini CLI session, which %s cannot continue: pass the sessionId of an earlier chat or chat-reply result", sessionID, config.FamilyName(d.family()))
	}
	if ref.Kind != session.RefUUID {
		if d.scoped() {
			return fmt.Errorf("sessionId %q could name another client's session: pass the sessionId of an earlier chat or chat-reply result; %v", sessionID, errScoped)
		}
		if dir == "" {
			if dir, err = d.resolveCwd(""); err != nil {
				return err
			}
		}
		call.Dir = dir
		return nil
	}
	rec, ok, err := d.Store.Get(ctx, ref.Value)
	if err != nil {
		return storeError(err)
	}
	if ok && !d.mayUse(rec, who) || !ok && d.scoped() {
		// Another token's session is as unknown as one never recorded.
		d.Log.Info("refused a session of another client", "id", ref.Value, "recorded", ok)
		return fmt.Errorf("unknown sessionId %s: this server has no record of it for this client. Use a sessionId from an earlier chat result; %v", ref.Value, errScoped)
	}
	if ok && rec.Family() != d.family() {
		return fmt.Errorf("session %s was started on %s, and this server runs %s: the two keep separate histories, so one cannot continue the other's session. "+
			"Start a new session with chat, or continue this one on a server run with the backend that started it",
			ref.Value, config.FamilyName(rec.Family()), config.FamilyName(d.family()))
	}
	if ok && rec.Family() == config.FamilyCLI && rec.Host != "" && rec.Host != d.Host {
		return fmt.Errorf("session %s was started on host %s, and this server runs on %s: the Gemini CLI keeps a session's files on the host that ran it, so only a server on %s can continue it. "+
			"Continue it there, or start a new session with chat", ref.Value, rec.Host, d.Host, rec.Host)
	}
	switch {
	case ok && dir != "" && dir != rec.Cwd && rec.Family() == config.FamilyCLI:
		return fmt.Errorf("session %s was started in %s, not %s; the Gemini CLI can only resume a session in the directory it was started in: omit cwd or pass %s",
			ref.Value, rec.Cwd, dir, rec.Cwd)
	case ok:
		call.Dir = rec.Cwd
		d.keepSystemPrompt(call, rec)
		return d.checkRecordedDir(rec)
	case d.family() != config.FamilyCLI:
		return fmt.Errorf("unknown sessionId %s: this server has no record of it. Use a sessionId from an earlier chat result", ref.Value)
	case dir == "":
		return fmt.Errorf("unknown sessionId %s: this server has no record of it. Use a sessionId from an earlier chat result, or pass cwd with the directory the session was started in to continue a session started outside this server", ref.Value)
	}
	call.Dir = dir
	return nil
}

// family is the family of the backend serving the tools: a session
// belongs to the family that started it.
func (d *Deps) family() config.Family { return config.Backend(d.Backend.Name()).Family() }

// continuableFilter is f narrowed to the sessions this server can
// continue: those of its backend's family, and of the CLI's only those
// whose files are on this host.
func (d *Deps) continuableFilter(f session.Filter) session.Filter {
	f.Backend = d.family()
	if f.Backend == config.FamilyCLI {
		f.Host, f.ByHost = d.Host, true
	}
	return f
}

// keepSystemPrompt gives an API session's reply without a system prompt
// the one the session started with: the API backend sends the whole
// conversation each turn, the system prompt included, and a reply that
// dropped it would change the assistant mid-conversation. The CLI keeps no
// system prompt between turns, so there a reply's own applies.
func (d *Deps) keepSystemPrompt(call *backend.Turn, rec session.Record) {
	if call.SystemPrompt == "" && rec.Family() == config.FamilyAPI {
		call.SystemPrompt = rec.SystemPrompt
	}
}

// checkRecordedDir makes sure a recorded session's directory still exists.
// Its directory is checked against the allowed roots as well: the record
// may predate them, or its directory may since have become a symlink.
//
// A session of the API backend has nothing in its directory: the Gemini
// API uses none, and its files come from the serving replica's project
// root. Its recorded cwd only says where it started, so replicas confined
// to different directories continue each other's sessions.
func (d *Deps) checkRecordedDir(rec session.Record) error {
	if rec.Family() == config.FamilyAPI {
		return nil
	}
	dir, err := validate.ResolveDir(rec.Cwd, "/")
	if err != nil {
		return fmt.Errorf("session %s belongs to %s, which cannot be used any more: %v", rec.ID, rec.Cwd, err)
	}
	if dir != rec.Cwd {
		return fmt.Errorf("session %s belongs to %s, which now leads to %s; the Gemini CLI can only resume a session in the directory it was started in", rec.ID, rec.Cwd, dir)
	}
	if err := d.checkRoot(rec.Cwd, dir); err != nil {
		return fmt.Errorf("session %s: %w", rec.ID, err)
	}
	return nil
}

// resolveCwd turns a cwd argument (or the default, when empty) into the
// real directory a call runs in, after resolving symlinks, and refuses one
// outside the allowed roots.
func (d *Deps) resolveCwd(cwd string) (string, error) {
	orig := cwd
	if cwd == "" {
		orig = d.DefaultCwd
	}
	dir, err := validate.ResolveDir(orig, d.DefaultCwd)
	if err != nil {
		return "", err
	}
	if err := d.checkRoot(orig, dir); err != nil {
		return "", err
	}
	return dir, nil
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

// callContext is ctx ended also by the server's lifetime and, over HTTP,
// by the request that carries the call; cancel releases it.
func (d *Deps) callContext(ctx context.Context, req *mcp.CallToolRequest) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stops := []func() bool{}
	if d.Lifetime != nil {
		stops = append(stops, context.AfterFunc(d.Lifetime, cancel))
	}
	if d.RequestContext != nil {
		if rc := d.RequestContext(req); rc != nil {
			stops = append(stops, context.AfterFunc(rc, cancel))
		}
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// run makes the call, records the session and builds the tool result.
func (d *Deps) run(ctx context.Context, req *mcp.CallToolRequest, call backend.Turn) *mcp.CallToolResult {
	ctx, cancel := d.callContext(ctx, req)
	defer cancel()
	if call.Session != "" && req.Params.RequestState == "" {
		if n := d.pending.supersede(d.clientOf(req).key(), call.Session); n > 0 {
			d.Log.Info("a new call on the session withdrew the tool confirmation left unanswered", "session", call.Session)
		}
	}
	switch {
	case !canElicit(req):
		// Untrusted downstream tools run only if the operator allows them.
	case usesMRTR(req):
		return d.runMRTR(ctx, req, call)
	default:
		caller := CallerOf(ctx)
		call.Confirm = d.grants.confirmFor(caller, elicitConfirm(req, caller))
	}
	return d.runTurn(ctx, req, call)
}

// runTurn runs the turn and builds the tool result.
func (d *Deps) runTurn(ctx context.Context, req *mcp.CallToolRequest, call backend.Turn) *mcp.CallToolResult {
	p := startProgress(ctx, req, d.ProgressInterval)
	defer p.finish()
	res, unsaved, err := d.answer(ctx, req, call, call.Prompt, p)
	switch {
	case errors.Is(err, ErrWaitCancelled):
		return failure(fmt.Errorf("the call was cancelled while waiting for an earlier call on session %s", call.Session))
	case err != nil:
		return failure(err)
	}
	var out *mcp.CallToolResult
	if len(res.Text) > d.MaxAnswerBytes {
		// Never cut silently: the rest waits for chat-page.
		out = d.pageAnswer(context.WithoutCancel(ctx), res.SessionID, res.Text)
	} else {
		out = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Text}}}
		if res.SessionID != "" {
			out.Meta = mcp.Meta{"sessionId": res.SessionID}
		}
		d.addSessionNote(out, res.SessionID)
	}
	if res.Usage != nil || len(res.NotApplied) > 0 {
		if out.Meta == nil {
			out.Meta = mcp.Meta{}
		}
		if res.Usage != nil {
			out.Meta["usage"] = res.Usage
		}
		if len(res.NotApplied) > 0 {
			// The turn was answered without this tuning: say so rather
			// than fail.
			out.Meta["notApplied"] = res.NotApplied
		}
	}
	if res.Incomplete != "" {
		// Said in the text, where the model reads it, and in _meta.
		out.Content = append(out.Content, &mcp.TextContent{Text: IncompleteNote(res.Incomplete)})
		if out.Meta == nil {
			out.Meta = mcp.Meta{}
		}
		out.Meta["incomplete"] = true
	}
	if unsaved != "" {
		// The answer is paid for and complete: it is returned, not turned
		// into an error, with a note the model cannot miss.
		out.Content = append(out.Content, &mcp.TextContent{Text: unsaved})
		if out.Meta == nil {
			out.Meta = mcp.Meta{}
		}
		out.Meta["sessionSaved"] = false
	}
	return out
}

// unkeptNote tells the caller that the backend answered but could not
// keep the turn (err): a new session cannot be continued at all, a
// continued one goes on without this exchange.
func (d *Deps) unkeptNote(res *backend.Answer, err error) string {
	const prefix = "[gemini-mcp-server: the answer above is complete, but "
	const fix = " The server's operator should check the session store (--store, --state-dir; gemini-mcp-server doctor checks it).]"
	if res.SessionID == "" {
		return prefix + "the conversation could not be saved (" + err.Error() + "), so it cannot be continued: " +
			"for a follow-up, start a new chat and give it what it needs of this answer." + fix
	}
	return prefix + "this turn could not be saved (" + err.Error() + "): session " + res.SessionID +
		" goes on from the turn before it, without this exchange, when continued." + fix
}

// IncompleteNote is the text item after an answer that was cut short;
// why says how and what became of the session.
func IncompleteNote(why string) string {
	return "[gemini-mcp-server: the answer above is INCOMPLETE. " + why + "]"
}

// unsavedNote tells the caller that the session store failed to record a
// turn, and what still works.
func (d *Deps) unsavedNote(ctx context.Context, id, dir string, err error) string {
	const prefix = "[gemini-mcp-server: the answer above is complete, but "
	const fix = " The server's operator should check the session store (--store, --state-dir; gemini-mcp-server doctor checks it).]"
	if _, known, _ := d.Store.Get(ctx, id); known {
		return prefix + "this turn could not be recorded (" + err.Error() + "). Continuing with sessionId " + id +
			" still works; chat-reply without sessionId may pick another session." + fix
	}
	how := " To continue it, pass sessionId " + id + " together with cwd " + dir + "."
	if d.scoped() {
		how = " It cannot be continued through this server."
	}
	return prefix + "the session could not be saved (" + err.Error() + "), so chat-reply does not know sessionId " + id + "." + how + fix
}

// addSessionNote appends the sessionId as a text item of its own, after
// the answer, so that the answer's text stays exactly Gemini's.
func (d *Deps) addSessionNote(out *mcp.CallToolResult, sessionID string) {
	if d.SessionIDInText && sessionID != "" {
		out.Content = append(out.Content, &mcp.TextContent{Text: SessionNote(sessionID)})
	}
}

// SessionNote is the text item naming a result's session.
func SessionNote(sessionID string) string {
	return "sessionId: " + sessionID + " (pass it to chat-reply to continue this conversation)"
}

// sessionKey names the session a call continues, for ordering calls on it.
// A new session needs no ordering: no one else knows its id yet. "latest"
// and indexes are ordered per directory, since which session they mean is
// only known to the CLI.
func sessionKey(c backend.Turn) string {
	switch {
	case c.Session == "":
		return ""
	case session.IsUUID(c.Session):
		return "id:" + c.Session
	}
	return "dir:" + c.Dir
}

// failure builds the isError result: the prefix, the reason and, when the
// CLI ran, the tail of its stderr.
func failure(err error) *mcp.CallToolResult {
	text := ErrorPrefix + err.Error()
	var ge *backend.Error
	if errors.As(err, &ge) && ge.Ran {
		text += "\nStderr: " + ge.Stderr
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// checkArgs refuses arguments the tool does not define. The schema leaves
// additionalProperties out (the Gemini CLI strips it), so a misspelt
// argument such as session_id would otherwise be silently ignored. The
// tool's own input schema, as registered, says which arguments exist.
func checkArgs(req *mcp.CallToolRequest) error {
	if req == nil || req.Params == nil || len(req.Params.Arguments) == 0 {
		return nil
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(req.Params.Arguments, &args); err != nil {
		return nil // the SDK has validated the shape already
	}
	known := knownArgs(req.Params.Name)
	var unknown []string
	for k := range args {
		if !contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	return fmt.Errorf("unknown argument %s; this tool takes %s", quoteAll(unknown), strings.Join(known, ", "))
}

// toolArgs lists each tool's arguments, in the order of its input struct,
// from the same schemas the tools are registered with.
var toolArgs = sync.OnceValue(func() map[string][]string {
	m := map[string][]string{}
	for _, t := range []*mcp.Tool{chatTool(false), replyTool(), pageTool(), sessionsTool()} {
		m[t.Name] = t.InputSchema.(*jsonschema.Schema).PropertyOrder
	}
	return m
})

// knownArgs returns the arguments of the tool named name.
func knownArgs(name string) []string { return toolArgs()[name] }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func quoteAll(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

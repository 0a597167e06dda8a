package conversation

import (
	"context"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/identity"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/access"
)

// Request is one tool call's turn, as its tool asks for it: built from
// the tool's typed input in one place per tool, then handed to Do.
type Request struct {
	// Call is the MCP request that carries the turn: who sent it, where
	// its progress goes, how its user may be asked to confirm a
	// downstream tool (nil in tests that call no client).
	Call *mcp.CallToolRequest
	// Turn is what the tool asks of Gemini: its prompt (without the
	// files), model, system prompt, tuning, built-in tools and response
	// schema. Do adds the session, the directory, the files and the
	// confirmation; the tool sets none of them.
	Turn backend.Turn
	// Continue says that the turn continues a session: Session, which
	// "" means this client's most recent one (see target). Cwd is the
	// directory the call names ("" for none); a new session runs in it,
	// or in the default directory.
	Continue bool
	Session  string
	Cwd      string
	// Gather, when set, reads what the turn sends beside the tool's
	// arguments, once the session is known (session is the one the turn
	// continues, "" for a new one), and makes the turn's prompt.
	Gather func(ctx context.Context, session string) (Material, error)
	// Title names a new session in the sessions tool's list (Title of
	// it); "" means the prompt after the files.
	Title string
	// Render builds the tool's result of the answer. It runs on the
	// call that started the turn, which is not the call that returns
	// its result when the client's user was asked through the result
	// (protocol 2026-07-28): what it reads of the call is what the tool
	// gathered for it. A result that is an error keeps the files
	// unrecorded.
	Render func(ctx context.Context, o Outcome) (*mcp.CallToolResult, error)
	// Background runs the turn as a job (see background.go): Do checks
	// and gathers what it can at once, then answers with a result naming
	// the job, and the turn runs on apart from the call. Finish makes the
	// job's outcome of Do's, as the tool's handler would of a synchronous
	// call: its result is stored as the job's, its error as the job's
	// failure (a *jsonrpc.Error kept as such). nil keeps Do's, and
	// keeps a synchronous call from being handed over to a job past the
	// operator's limit (Options.JobAfter; see handover.go): a tool whose
	// result a job can hold sets it whether or not it asks for
	// Background.
	Background bool
	Finish     func(res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error)
}

// Material is what a tool gathered for a turn (Request.Gather).
type Material struct {
	// Prompt is the turn's whole prompt, the files first; ContextLen the
	// length of the files' part, a context the API backend may cache
	// (backend.Turn.ContextLen).
	Prompt     string
	ContextLen int
	// Media are the files Gemini reads itself.
	Media []backend.Media
	// Sent, when not nil, are the files noted as sent in the session
	// through Record once Gemini has answered, so that its later turns
	// skip them.
	Sent   *filectx.Files
	Record func(ctx context.Context, sessionID string, f *filectx.Files) error
	// FileSearchStores are File Search stores the tool made ready for
	// the turn (package filesearch), added to its built-in tools.
	FileSearchStores []string
	// Prepare, when set, is the slow part of what the tool gathers (the
	// index of the project root for File Search): Gather checks the
	// arguments and reads the files at once, so that their errors fail
	// the call at once, and the turn runs Prepare first, on its own
	// context, so that a background turn's job, or a call handed over to
	// one past --job-after, does it: its progress (GatherProgress) is the
	// job's, and the job's cancel stops it. It returns more File Search
	// stores for the turn; its error is the turn's.
	Prepare func(ctx context.Context) (fileSearchStores []string, err error)
}

// Outcome is an answered turn, for the tool's renderer.
type Outcome struct {
	// Answer is Gemini's answer.
	Answer *backend.Answer
	// Unsaved, when not "", is the note to show beside the answer: the
	// answer came, but its turn could not be kept (see render.AddUnsaved).
	Unsaved string
	// Elapsed is how long the turn took, its wait for the session
	// included.
	Elapsed time.Duration
	// Ask, when not nil, puts a question to the user of the client that
	// made the call, the way a downstream tool is confirmed (see
	// confirm.go): id names the question among the call's input
	// requests. It is nil when the client cannot be asked: it declared
	// no form elicitation, or the turn runs as a job.
	Ask Asker
	s   *Service
	// owner owns the turn's session, and so the pages of its answer.
	owner string
}

// Paged keeps an answer too long for one result as pages for
// chat-page, and returns its first page with the note that says how to
// get the next, and the paging's facts for _meta (answerId, page, pages,
// and droppedBytes when the store keeps less). ok is false when the
// answer fits in one result.
func (o Outcome) Paged(ctx context.Context) (first string, meta mcp.Meta, ok bool) {
	return o.s.paged(ctx, o.owner, o.Answer.SessionID, o.Answer.Text, o.Unsaved == "")
}

// TargetError is Do's failure to choose the session or the directory of
// the turn: nothing was gathered or run.
type TargetError struct{ Err error }

func (e *TargetError) Error() string { return e.Err.Error() }
func (e *TargetError) Unwrap() error { return e.Err }

// WaitCancelled is Do's failure when the call ended while it waited for
// an earlier call on Session; it matches ErrWaitCancelled.
type WaitCancelled struct{ Session string }

func (e *WaitCancelled) Error() string { return ErrWaitCancelled.Error() }

// Is makes a WaitCancelled match ErrWaitCancelled.
func (e *WaitCancelled) Is(target error) bool { return target == ErrWaitCancelled }

// Do runs the turn r for any tool, the one way a turn runs: it resolves
// the caller and the session the turn continues (or the directory of a
// new one), gathers what the tool sends, asks the client's user before
// Gemini runs an untrusted downstream tool (see confirm.go), waits for
// earlier turns of the session, runs the turn, records the session and
// the files sent, and returns the result r.Render builds of the answer.
// Its errors are the caller's to render: a *TargetError, Gather's,
// a *WaitCancelled, a store failure, an error wrapping ErrTurnLimit, the
// backend's (a *backend.Error), Render's, or why a confirmation could not
// be answered.
func (s *Service) Do(ctx context.Context, r Request) (*mcp.CallToolResult, error) {
	c := s.CallOf(ctx, r.Call)
	var p access.Place
	if r.Continue {
		var err error
		if p, err = s.acc.Target(ctx, r.Session, r.Cwd, c.Who); err != nil {
			return nil, &TargetError{err}
		}
	} else {
		dir, err := s.ResolveDir(r.Cwd)
		if err != nil {
			return nil, &TargetError{err}
		}
		p.Dir = dir
	}
	var m *Material
	if r.Gather != nil {
		// What Gather reports (GatherProgress) goes to the client as the
		// turn's progress does.
		gp := s.startProgress(ctx, c)
		g, err := r.Gather(context.WithValue(ctx, gatherKey{}, gp), p.Session)
		gp.finish()
		if err != nil {
			return nil, err
		}
		m = &g
	}
	turn := turnOf(r.Turn, p, m, c.Who)
	title := r.Title
	if title == "" {
		title = turn.Prompt[turn.ContextLen:]
	}
	// rc is the call the turn runs for: c, but for a background turn,
	// whose progress goes to its job and which no request ends.
	rc := c
	run := func(ctx context.Context, turn backend.Turn, ask Asker) (*mcp.CallToolResult, error) {
		if m != nil && m.Prepare != nil {
			stores, err := s.prepare(ctx, rc, m.Prepare)
			if err != nil {
				return nil, err
			}
			turn.Builtins.FileSearchStores = append(slices.Clip(turn.Builtins.FileSearchStores), stores...)
		}
		start := time.Now()
		ans, unsaved, err := s.run(ctx, rc, turn, title)
		if err != nil {
			return nil, err
		}
		res, err := r.Render(ctx, Outcome{Answer: ans, Unsaved: unsaved, Elapsed: time.Since(start), Ask: ask, s: s, owner: c.Who.Token})
		if err != nil || res.IsError {
			return res, err
		}
		if m != nil && m.Sent != nil && m.Record != nil && ans.SessionID != "" {
			// The answer is complete: recording what it was sent must not
			// fail the call; at worst the files are sent again next turn.
			if err := m.Record(context.WithoutCancel(ctx), ans.SessionID, m.Sent); err != nil {
				s.o.Log.Warn("recording the files sent", "session", ans.SessionID, "err", err)
			}
		}
		return res, nil
	}
	if r.Background {
		return s.background(ctx, r, &rc, turn, run)
	}
	h := s.handover(r, c)
	if h != nil {
		// Its progress goes where the handover says: the client's,
		// then the job's.
		rc.notify = h.send
	}
	return s.confirmed(ctx, r.Call, c, turn, run, h)
}

// prepare runs the slow part of a turn's material (Material.Prepare) for
// the call c, its progress reported as Gather's is.
func (s *Service) prepare(ctx context.Context, c Call, f func(context.Context) ([]string, error)) ([]string, error) {
	p := s.startProgress(ctx, c)
	defer p.finish()
	return f(context.WithValue(ctx, gatherKey{}, p))
}

// turnOf is the turn Do runs, complete: the tool's (t), where it runs
// (p), what the tool gathered to send (m, nil for nothing) and for whom.
// Nothing changes it after, but for the two ways back to the client the
// backend is handed with it: Confirm (the confirmation step) and Observer
// (progress).
func turnOf(t backend.Turn, p access.Place, m *Material, who identity.Who) backend.Turn {
	t.Session, t.Dir = p.Session, p.Dir
	if t.SystemPrompt == "" {
		t.SystemPrompt = p.SystemPrompt
	}
	if m != nil {
		t.Prompt, t.ContextLen = m.Prompt, m.ContextLen
		t.Media = append(slices.Clip(t.Media), m.Media...)
		t.Builtins.FileSearchStores = append(slices.Clip(t.Builtins.FileSearchStores), m.FileSearchStores...)
	}
	t.Owner = who.Caller
	return t
}

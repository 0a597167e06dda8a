// Package conversation is the turn pipeline every tool shares, entered
// through Service.Do (pipeline.go) with a Request a tool builds from its
// input: which session a call continues (or that it starts one), in which
// directory, whether its caller may (by the rules of
// internal/session/access); what the tool gathers to send; the
// confirmation of untrusted downstream tools by the client's user
// (confirm.go); the wait for earlier turns of the same session (in this
// process, then through the store's lease); the turn itself, through
// backend.Backend, which nothing else runs; its record in the session
// store, and the files it sent; and an answer too long for one result
// kept as pages. The tool renders the answer. It also holds who a call
// comes from (caller.go); the tool layer's error vocabulary is
// internal/toolerr's. The chat tools (internal/tools) and the expert tools
// (internal/expert) use it, and never each other.
package conversation

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/identity"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/queue"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/access"
)

// Options configure a Service.
type Options struct {
	// Backend answers the turns; the pipeline knows nothing of which one
	// it is. Its Close is the server's to call.
	Backend backend.Backend
	// Store keeps the sessions: records, the API backend's turns, answer
	// pages and leases. Its Close is the server's to call.
	Store      session.Store
	DefaultCwd string // where calls without cwd run
	// AllowedRoots, when not nil, are the only directories (with their
	// subdirectories) calls may run in, as resolved by access.ResolveRoots: a
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
	// MaxTurns caps a conversation (--max-turns); 0 means
	// config.DefaultMaxTurns.
	MaxTurns int
	// Host names this host in the records of CLI sessions, whose files
	// live here; "" means os.Hostname.
	Host string
	// ProgressInterval is how often progress is reported to clients that
	// ask for it; 0 means config.DefaultProgressInterval.
	ProgressInterval time.Duration
	// MaxAnswerBytes is the largest answer returned in one result; longer
	// ones are paged (see Page). 0 means config.DefaultMaxAnswerBytes.
	MaxAnswerBytes int
	// MaxPagedBytes bounds the pages kept of one answer (the store bounds
	// all answers together), so that a huge answer cannot fill the store;
	// 0 means config.DefaultMaxOutputBytes: the largest answer a call can
	// return fits.
	MaxPagedBytes int
	// Lifetime, when set, ends every call when it ends: the server is
	// shutting down or its client has gone.
	Lifetime context.Context
	// RequestContext, when set, returns the context of the HTTP request
	// that carries a call (nil if none): the call ends when it ends.
	RequestContext func(*mcp.CallToolRequest) context.Context
	// ConfirmWait is how long a turn waits for a 2026-07-28 client to come
	// back with its user's answer to a tool confirmation (see confirm.go);
	// 0 means DefaultConfirmWait.
	ConfirmWait time.Duration
	// Jobs keeps the background jobs (Request.Background), with JobTTL
	// (0: config.DefaultJobTTL) and JobLimits; nil refuses background
	// calls.
	Jobs      jobs.Store
	JobTTL    time.Duration
	JobLimits jobs.Limits
	// JobAfter, when positive, hands a synchronous call still running
	// after it over to a job (see handover.go; --job-after).
	JobAfter time.Duration
	Log      *slog.Logger
	Now      func() time.Time
}

// Service is the pipeline, shared by every tool of a server. It is
// complete once New returns.
type Service struct {
	o Options
	// sessions orders calls on the same session within this process, and
	// reports a waiting call's place; the store's lease then orders them
	// across processes. The CLI appends to one session file, so two turns
	// must not run at once.
	sessions queue.Locks
	// pending are the turns waiting for a 2026-07-28 client to answer a
	// tool confirmation; grants what each caller's user allowed for good.
	pending pendingTurns
	grants  grants
	// acc decides which session a turn continues, whether its caller
	// may, and in which directory it runs.
	acc *access.Rules
}

// New returns the pipeline of o, its defaults filled in.
func New(o Options) *Service {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.MaxAnswerBytes <= 0 {
		o.MaxAnswerBytes = config.DefaultMaxAnswerBytes
	}
	if o.MaxPagedBytes <= 0 {
		o.MaxPagedBytes = config.DefaultMaxOutputBytes
	}
	if o.MaxTurns <= 0 {
		o.MaxTurns = config.DefaultMaxTurns
	}
	if o.Host == "" {
		// A host without a name records none: its sessions are then not
		// refused elsewhere, as before hosts were recorded.
		o.Host, _ = os.Hostname()
	}
	s := &Service{o: o}
	s.acc = &access.Rules{Store: o.Store, DefaultCwd: o.DefaultCwd, AllowedRoots: o.AllowedRoots,
		Remote: o.Remote, Authenticated: o.Authenticated, ShareSessions: o.ShareSessions,
		Host: o.Host, Family: s.family, Log: o.Log}
	return s
}

// family is the family of the backend serving the tools: a session
// belongs to the family that started it.
func (s *Service) family() config.Family { return s.o.Backend.Family() }

// ResolveDir turns a cwd argument (or the default, when empty) into the
// real directory a call runs in, after resolving symlinks, and refuses one
// outside the allowed roots.
func (s *Service) ResolveDir(cwd string) (string, error) { return s.acc.ResolveDir(cwd) }

// Sessions lists, newest first, the sessions who may continue (on stdio
// all of them, over HTTP its own, unless the operator shares sessions),
// in cwd when cwd is given; more says whether more follow.
func (s *Service) Sessions(ctx context.Context, who identity.Who, cwd string, offset, limit int) (recs []session.Record, more bool, err error) {
	return s.acc.Sessions(ctx, who, cwd, offset, limit)
}

// Prepare tells the backend that a client has connected, so that it can
// get ready for a chat in the default directory before one comes (the warm
// backend starts a process). It returns at once.
func (s *Service) Prepare() {
	dir, err := s.ResolveDir("")
	if err != nil {
		return // the first call reports it
	}
	backend.Prepare(s.o.Backend, dir)
}

// bind returns ctx ended also by the server's lifetime and, over HTTP, by
// the request that carries c; cancel releases it.
func (s *Service) bind(ctx context.Context, c Call) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stops := []func() bool{}
	if s.o.Lifetime != nil {
		stops = append(stops, context.AfterFunc(s.o.Lifetime, cancel))
	}
	if c.request != nil {
		stops = append(stops, context.AfterFunc(c.request, cancel))
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// SessionIDInText says whether answers name their sessionId in a text
// item too (Options.SessionIDInText).
func (s *Service) SessionIDInText() bool { return s.o.SessionIDInText }

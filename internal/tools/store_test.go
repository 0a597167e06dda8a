package tools

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

func chatOK(t *testing.T, d *Deps, in ChatInput) string {
	t.Helper()
	res, _, _ := d.chat(context.Background(), request(t, "chat", map[string]any{"prompt": in.Prompt}), in)
	if res.IsError {
		t.Fatal(textOf(res))
	}
	return res.Meta["sessionId"].(string)
}

func replyTo(t *testing.T, d *Deps, in ReplyInput) *mcp.CallToolResult {
	t.Helper()
	res, _, _ := d.chatReply(context.Background(), request(t, "chat-reply", map[string]any{"prompt": in.Prompt}), in)
	return res
}

func record(t *testing.T, d *Deps, id string) session.Record {
	t.Helper()
	rec, ok, err := optsOf(d).Store.Get(context.Background(), id)
	if err != nil || !ok {
		t.Fatalf("no record of %s: %v", id, err)
	}
	return rec
}

// TestMaxTurns: a session at --max-turns is refused before its backend is
// called, with what to do; other sessions go on.
func TestMaxTurns(t *testing.T) {
	t.Parallel()
	d, r := newStubDeps(t)
	d = d.with(func(o *conversation.Options) { o.MaxTurns = 2 })
	id := chatOK(t, d, ChatInput{Prompt: "p"})
	if res := replyTo(t, d, ReplyInput{Prompt: "q", SessionID: id}); res.IsError {
		t.Fatal(textOf(res))
	}
	calls := len(r.calls)
	res := replyTo(t, d, ReplyInput{Prompt: "q", SessionID: id})
	want := fmt.Sprintf("session %s has reached the limit of 2 turns (--max-turns): start a new session with chat", id)
	if !res.IsError || !strings.Contains(textOf(res), want) {
		t.Fatalf("at the cap: %s", textOf(res))
	}
	// Without sessionId, the same session is meant, and refused the same.
	if res := replyTo(t, d, ReplyInput{Prompt: "q"}); !res.IsError || !strings.Contains(textOf(res), want) {
		t.Fatalf("at the cap, without sessionId: %s", textOf(res))
	}
	if len(r.calls) != calls {
		t.Fatal("a refused turn reached the backend")
	}
	if rec := record(t, d, id); rec.Turns != 2 {
		t.Fatalf("%d turns recorded", rec.Turns)
	}
	chatOK(t, d, ChatInput{Prompt: "a new one"})
}

// TestRecordedTitleHostAndSystemPrompt: the first turn records its title,
// the CLI's host (the API's none) and the system prompt.
func TestRecordedTitleHostAndSystemPrompt(t *testing.T) {
	t.Parallel()
	d, _ := newStubDeps(t)
	d = d.with(func(o *conversation.Options) { o.Host = "build-7" })
	prompt := "Review this\n\tdiff for  races, please: the worker pool and its queue, then the shutdown path"
	id := chatOK(t, d, ChatInput{Prompt: prompt, SystemPrompt: "be terse"})
	replyTo(t, d, ReplyInput{Prompt: "and the tests?", SessionID: id, SystemPrompt: "other"})
	rec := record(t, d, id)
	if rec.Title != "Review this diff for races, please: the worker pool and its …" || rec.Host != "build-7" || rec.SystemPrompt != "be terse" || rec.Turns != 2 {
		t.Fatalf("record %+v", rec)
	}
	d = d.with(func(o *conversation.Options) { o.Backend = &stubRunner{name: "api"} })
	id = chatOK(t, d, ChatInput{Prompt: "short"})
	if rec := record(t, d, id); rec.Host != "" || rec.Title != "short" {
		t.Fatalf("API record %+v", rec)
	}
}

// TestAPIReplyKeepsSystemPrompt: on the API backend a reply without a
// system prompt gets the session's; one with its own sends that. The CLI
// backends keep nothing between turns.
func TestAPIReplyKeepsSystemPrompt(t *testing.T) {
	t.Parallel()
	d, cli := newStubDeps(t)
	api := &stubRunner{name: "api"}
	d = d.with(func(o *conversation.Options) { o.Backend = api })
	id := chatOK(t, d, ChatInput{Prompt: "p", SystemPrompt: "answer in French"})
	replyTo(t, d, ReplyInput{Prompt: "q", SessionID: id})
	if got := api.last().SystemPrompt; got != "answer in French" {
		t.Fatalf("reply by id sent system prompt %q", got)
	}
	replyTo(t, d, ReplyInput{Prompt: "q"})
	if got := api.last().SystemPrompt; got != "answer in French" {
		t.Fatalf("reply without sessionId sent system prompt %q", got)
	}
	replyTo(t, d, ReplyInput{Prompt: "q", SessionID: id, SystemPrompt: "in German now"})
	if got := api.last().SystemPrompt; got != "in German now" {
		t.Fatalf("reply with its own sent %q", got)
	}
	d = d.with(func(o *conversation.Options) { o.Backend = cli })
	id = chatOK(t, d, ChatInput{Prompt: "p", SystemPrompt: "answer in French"})
	replyTo(t, d, ReplyInput{Prompt: "q", SessionID: id})
	if got := cli.last().SystemPrompt; got != "" {
		t.Fatalf("CLI reply sent system prompt %q", got)
	}
}

// TestCLISessionOfAnotherHost: a CLI session recorded on another host (a
// replica sharing the store) is refused by id, naming the host, and is
// never "the most recent session" here.
func TestCLISessionOfAnotherHost(t *testing.T) {
	t.Parallel()
	d, r := newStubDeps(t)
	d = d.with(func(o *conversation.Options) { o.Host = "here" })
	local := chatOK(t, d, ChatInput{Prompt: "p"})
	there := session.NewUUID()
	if _, err := optsOf(d).Store.Touch(context.Background(), there, session.Turn{Cwd: optsOf(d).DefaultCwd, Backend: "cli", Host: "there"}, optsOf(d).Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	calls := len(r.calls)
	res := replyTo(t, d, ReplyInput{Prompt: "q", SessionID: there})
	if !res.IsError || !strings.Contains(textOf(res), "was started on host there, and this server runs on here") ||
		!strings.Contains(textOf(res), "keeps a session's files on the host that ran it") {
		t.Fatalf("another host's session: %s", textOf(res))
	}
	if len(r.calls) != calls {
		t.Fatal("the refused turn reached the backend")
	}
	if res := replyTo(t, d, ReplyInput{Prompt: "q"}); res.IsError || r.last().Session != local {
		t.Fatalf("without sessionId: %s, continued %q, want %s", textOf(res), r.last().Session, local)
	}
	// The API backend's sessions live in the store alone: any host
	// continues them.
	d = d.with(func(o *conversation.Options) { o.Backend = &stubRunner{name: "api"} })
	api := session.NewUUID()
	if _, err := optsOf(d).Store.Touch(context.Background(), api, session.Turn{Cwd: optsOf(d).DefaultCwd, Backend: "api"}, optsOf(d).Now()); err != nil {
		t.Fatal(err)
	}
	if res := replyTo(t, d, ReplyInput{Prompt: "q", SessionID: api}); res.IsError {
		t.Fatalf("an API session: %s", textOf(res))
	}
}

// downStore is a session store that can go down, as a Redis server does.
type downStore struct {
	session.Store
	down atomic.Bool
}

var errDown = fmt.Errorf("dial tcp 127.0.0.1:6379: connection refused: %w", session.ErrUnavailable)

func (s *downStore) Get(ctx context.Context, id string) (session.Record, bool, error) {
	if s.down.Load() {
		return session.Record{}, false, errDown
	}
	return s.Store.Get(ctx, id)
}

func (s *downStore) List(ctx context.Context, f session.Filter) ([]session.Record, bool, error) {
	if s.down.Load() {
		return nil, false, errDown
	}
	return s.Store.List(ctx, f)
}

func (s *downStore) Lease(ctx context.Context, id string) (func(), error) {
	if s.down.Load() {
		return nil, errDown
	}
	return s.Store.Lease(ctx, id)
}

func (s *downStore) GetAnswer(ctx context.Context, id string) (session.PagedAnswer, bool, error) {
	if s.down.Load() {
		return session.PagedAnswer{}, false, errDown
	}
	return s.Store.GetAnswer(ctx, id)
}

// TestStoreUnavailable: while the store is down, calls that need it fail
// with a clear, retryable error and reach no backend; a new chat still
// answers; when the store is back, all works again.
func TestStoreUnavailable(t *testing.T) {
	t.Parallel()
	d, r := newStubDeps(t)
	st := &downStore{Store: optsOf(d).Store}
	d = d.with(func(o *conversation.Options) { o.Store = st })
	id := chatOK(t, d, ChatInput{Prompt: "p"})
	st.down.Store(true)
	calls := len(r.calls)
	for name, in := range map[string]ReplyInput{"by id": {Prompt: "q", SessionID: id}, "newest": {Prompt: "q"}} {
		res := replyTo(t, d, in)
		if !res.IsError || !strings.Contains(textOf(res), "the session store is unavailable (dial tcp 127.0.0.1:6379: connection refused") ||
			!strings.Contains(textOf(res), "The call can be retried") {
			t.Errorf("%s: %s", name, textOf(res))
		}
	}
	aid := session.NewUUID()
	res, _, _ := d.chatPage(context.Background(), request(t, "chat-page", map[string]any{"answerId": aid, "page": 2}), PageInput{AnswerID: aid, Page: 2})
	if !res.IsError || !strings.Contains(textOf(res), "the session store is unavailable") {
		t.Errorf("chat-page: %s", textOf(res))
	}
	if len(r.calls) != calls {
		t.Fatal("a call reached the backend without its session")
	}
	st.down.Store(false)
	if res := replyTo(t, d, ReplyInput{Prompt: "q", SessionID: id}); res.IsError {
		t.Fatalf("after the store came back: %s", textOf(res))
	}
}

// blockingRunner answers once its test lets it, and tells when a turn
// starts.
type blockingRunner struct {
	stubRunner
	started chan string
}

func (b *blockingRunner) Run(ctx context.Context, c backend.Turn) (*backend.Answer, error) {
	b.started <- c.Session
	return b.stubRunner.Run(ctx, c)
}

// TestLeaseOrdersProcesses: two servers sharing a store (two processes,
// or replicas) run one session's turns one after the other: a turn waits
// while another process holds the session's lease, and runs once it is
// given back.
func TestLeaseOrdersProcesses(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		store := memstore.New(session.Options{})
		defer store.Close()
		cwd := realTemp(t)
		run := &blockingRunner{started: make(chan string, 4)}
		b := &Deps{Conv: newConv(conversation.Options{Backend: run, Store: store, DefaultCwd: cwd}), MaxPromptBytes: 1 << 20}
		addAll(mcp.NewServer(&mcp.Implementation{Name: "b"}, nil), b)
		id := session.NewUUID()
		if _, err := store.Touch(context.Background(), id, session.Turn{Cwd: cwd, Backend: "cli"}, time.Now()); err != nil {
			t.Fatal(err)
		}
		// Process A is running a turn of the session.
		release, err := store.Lease(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan *mcp.CallToolResult)
		go func() { done <- replyTo(t, b, ReplyInput{Prompt: "q", SessionID: id}) }()
		synctest.Wait()
		select {
		case s := <-run.started:
			t.Fatalf("a turn of %s ran while another process held the lease", s)
		default:
		}
		release()
		if s := <-run.started; s != id {
			t.Fatalf("ran %s", s)
		}
		if res := <-done; res.IsError {
			t.Fatal(textOf(res))
		}
		// The lease is given back with the turn recorded.
		r2, err := store.Lease(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		r2()
		if rec, _, _ := store.Get(context.Background(), id); rec.Turns != 2 {
			t.Fatalf("%d turns recorded", rec.Turns)
		}
	})
}

package tools

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/mcptest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// asking is a backend whose turns ask Turn.Confirm about a downstream tool
// call asks times, as the API backend does before an untrusted tool runs,
// and answer with the decisions: "decline", "once", "tool", "server",
// "no confirm" when the turn has no Confirm, or "error: …".
type asking struct {
	asks      int
	cancelled chan struct{} // a Confirm, or the hold, ended by the turn's context
	// holding, when set, is told once the questions are answered; the
	// turn then waits for its context to end.
	holding chan struct{}
}

func (a *asking) Name() string          { return "api" }
func (a *asking) Family() config.Family { return config.FamilyAPI }
func (a *asking) Close()                {}

func (a *asking) Run(ctx context.Context, t backend.Turn) (*backend.Answer, error) {
	var out []string
	for i := 0; i < a.asks; i++ {
		if t.Confirm == nil {
			out = append(out, "no confirm")
			break
		}
		d, err := t.Confirm(ctx, backend.ConfirmRequest{
			Tool: backend.HostTool{Name: "mcp_db_query", Server: "db", Tool: "query", Description: "runs SQL"},
			Args: map[string]any{"sql": fmt.Sprintf("select %d", i+1)},
		})
		if err != nil {
			if ctx.Err() != nil {
				a.cancelled <- struct{}{}
				return nil, ctx.Err()
			}
			out = append(out, "error: "+err.Error())
			continue
		}
		out = append(out, []string{"decline", "once", "tool", "server"}[d])
	}
	if a.holding != nil {
		a.holding <- struct{}{}
		<-ctx.Done()
		a.cancelled <- struct{}{}
		return nil, ctx.Err()
	}
	return &backend.Answer{SessionID: session.NewUUID(), Text: strings.Join(out, ","), Via: "api"}, nil
}

// confirmServer serves the tools with b over an in-memory transport and
// connects a go-sdk client speaking protocol, answering elicitations with
// answer (nil: a client without elicitation). It returns the session and
// the messages the client was asked.
func confirmServer(t *testing.T, b backend.Backend, protocol string, answer func() *mcp.ElicitResult, opts *mcp.ClientOptions) (*mcp.ClientSession, *Deps, func() []string) {
	t.Helper()
	return confirmServerWaiting(t, b, protocol, answer, opts, 0)
}

// confirmInputID is the id of the one input request a suspended call
// returns (the pipeline's).
const confirmInputID = "confirm-tool"

// confirmServerWaiting is confirmServer with the pipeline's ConfirmWait set
// to wait.
func confirmServerWaiting(t *testing.T, b backend.Backend, protocol string, answer func() *mcp.ElicitResult, opts *mcp.ClientOptions, wait time.Duration) (*mcp.ClientSession, *Deps, func() []string) {
	t.Helper()
	store := memstore.New(session.Options{})
	t.Cleanup(func() { store.Close() })
	d := &Deps{Conv: newConv(conversation.Options{Backend: b, Store: store, DefaultCwd: realTemp(t), ConfirmWait: wait}), MaxPromptBytes: 1 << 20}
	s := mcp.NewServer(&mcp.Implementation{Name: "gemini-mcp-server", Version: "t"}, nil)
	addAll(s, d)

	var mu sync.Mutex
	var asked []string
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	if answer != nil {
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, req.Params.Message)
			mu.Unlock()
			return answer(), nil
		}
	}
	cs := mcptest.Connect(t, s, &mcptest.Options{ClientOptions: opts, Session: &mcp.ClientSessionOptions{ProtocolVersion: protocol}})
	if got := cs.InitializeResult().ProtocolVersion; got != protocol {
		t.Fatalf("negotiated %s, want %s", got, protocol)
	}
	return cs, d, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), asked...)
	}
}

func chatText(t *testing.T, cs *mcp.ClientSession, ctx context.Context) string {
	t.Helper()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "go"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || len(res.Content) == 0 {
		t.Fatalf("chat failed: %+v", res)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

func testCtx(t *testing.T) context.Context {
	// A last-resort guard, never waited on.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func accept(choice string) func() *mcp.ElicitResult {
	return func() *mcp.ElicitResult {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": choice}}
	}
}

// TestConfirmThroughElicitation runs the same users through both protocol
// generations: up to 2025-11-25 the server sends elicitation/create while
// the call runs; from 2026-07-28 the call returns an input request and the
// go-sdk client calls again with the answer.
func TestConfirmThroughElicitation(t *testing.T) {
	t.Parallel()
	for _, protocol := range []string{"2025-06-18", "2025-11-25", "2026-07-28"} {
		t.Run(protocol, func(t *testing.T) {
			// What the user allowed for good is not asked again: the
			// turn's second question is answered "once" for the user.
			cases := []struct {
				name   string
				answer func() *mcp.ElicitResult
				want   string
				asked  int
			}{
				{"allows once then always", nil, "once,tool", 2},
				{"declines", func() *mcp.ElicitResult { return &mcp.ElicitResult{Action: "decline"} }, "decline,decline", 2},
				{"cancels", func() *mcp.ElicitResult { return &mcp.ElicitResult{Action: "cancel"} }, "decline,decline", 2},
				{"allows the server", accept("server"), "server,once", 1},
				{"allows the tool", accept("tool"), "tool,once", 1},
				{"cannot elicit", nil, "no confirm", 0},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					answer := c.answer
					if c.name == "allows once then always" {
						n := 0
						answer = func() *mcp.ElicitResult {
							n++
							return accept(map[int]string{1: "once", 2: "tool"}[n])()
						}
					}
					cs, _, asked := confirmServer(t, &asking{asks: 2}, protocol, answer, nil)
					if got := chatText(t, cs, testCtx(t)); got != c.want {
						t.Errorf("answer %q, want %q", got, c.want)
					}
					if answer == nil {
						return
					}
					q := asked()
					if len(q) != c.asked {
						t.Fatalf("asked %d times, want %d", len(q), c.asked)
					}
					for i := range q {
						for _, want := range []string{`"query"`, `"db"`, "mcp_db_query", fmt.Sprintf(`{"sql":"select %d"}`, i+1), "runs SQL"} {
							if !strings.Contains(q[i], want) {
								t.Errorf("question %d %q does not say %s", i, q[i], want)
							}
						}
					}
				})
			}
		})
	}
}

// TestSuspendedTurnStopsWhenTheClientDoesNotComeBack checks that a
// 2026-07-28 client that never answers the input request does not leave
// the turn waiting: it is stopped after ConfirmWait, and its request state
// is then refused.
func TestSuspendedTurnStopsWhenTheClientDoesNotComeBack(t *testing.T) {
	t.Parallel()
	b := &asking{asks: 1, cancelled: make(chan struct{}, 1)}
	cs, _, _ := confirmServerWaiting(t, b, "2026-07-28", accept("once"), &mcp.ClientOptions{MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}}, time.Millisecond)
	ctx := testCtx(t)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "go"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.NeedsInput() || res.RequestState == "" || res.InputRequests[confirmInputID] == nil {
		t.Fatalf("result %+v is no input request", res)
	}
	select {
	case <-b.cancelled:
	case <-ctx.Done():
		t.Fatal("the suspended turn was not stopped")
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "go"},
		RequestState: res.RequestState, InputResponses: mcp.InputResponseMap{confirmInputID: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": "once"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "unknown here or has expired") {
		t.Errorf("late answer: %+v", res)
	}
}

// TestCancelledCallStopsSuspendedTurn checks that a 2026-07-28 client that
// cancels the call that brought its user's answer stops the turn, which
// runs on a context of its own.
func TestCancelledCallStopsSuspendedTurn(t *testing.T) {
	t.Parallel()
	b := &asking{asks: 1, cancelled: make(chan struct{}, 1), holding: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	cs, _, _ := confirmServer(t, b, "2026-07-28", accept("once"), nil)
	go func() {
		select {
		case <-b.holding:
			cancel()
		case <-ctx.Done():
		}
	}()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "go"}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want cancelled", err)
	}
	select {
	case <-b.cancelled:
	case <-testCtx(t).Done():
		t.Fatal("the turn was not stopped")
	}
}

package conversation

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/identity"
)

// Before Gemini may run an untrusted downstream tool (API backend with MCP
// servers configured), the user of the MCP client is asked through MCP
// elicitation, for every tool alike, in one of two ways, by the protocol
// the call came with:
//
//   - up to 2025-11-25, the server sends its own elicitation/create request
//     while the call runs, and waits for the answer;
//   - from 2026-07-28 on, a server may not send requests of its own: the
//     call returns at once with an input request (a result carrying
//     inputRequests and a requestState), the client asks its user and
//     calls the tool again with the answer (inputResponses and the same
//     requestState), and the turn, which waited meanwhile, goes on. The
//     go-sdk client does this by itself.
//
// A client that declared no elicitation capability cannot be asked:
// Turn.Confirm is nil and only the operator's --allow-mcp-tools lets
// untrusted tools run.
//
// A tool's renderer puts its own questions (the image tool's saves) the
// same two ways, through Outcome.Ask: an elicitation/create request, or
// an input request of the suspended turn, which then resumes in Render.

// protocolMRTR is the first protocol version in which a server asks for
// input through the tool result (multi round-trip requests, SEP-2322).
const protocolMRTR = "2026-07-28"

// confirmInputID is the id of the input request that asks about a
// downstream tool call; a renderer's questions name their own.
const confirmInputID = "confirm-tool"

// Asker puts a question, a form elicitation, to the user of the client
// that made the call, and returns the answer: through an
// elicitation/create request (protocols before 2026-07-28), or as the
// input request id of the call's result, answered by the client's next
// call (see runMRTR). A nil result is no answer, to be taken as a no.
type Asker func(ctx context.Context, id string, p *mcp.ElicitParams) (*mcp.ElicitResult, error)

// DefaultConfirmWait is how long a turn waits, suspended, for a 2026-07-28
// client to call again with its user's answer before it is stopped
// (Options.ConfirmWait).
const DefaultConfirmWait = 10 * time.Minute

// The choices offered, as the form's values.
const (
	choiceOnce    = "once"
	choiceTool    = "tool"
	choiceServer  = "server"
	choiceDecline = "decline"
)

// confirmParams is the elicitation form that asks caller's user about one
// tool call.
func confirmParams(r backend.ConfirmRequest, caller string) *mcp.ElicitParams {
	args, err := json.Marshal(r.Args)
	if err != nil || r.Args == nil {
		args = []byte("{}")
	}
	msg := fmt.Sprintf("Gemini wants to run the tool %q of the MCP server %q (declared to Gemini as %s) with these arguments:\n%s\n\nAllow it?",
		r.Tool.Tool, r.Tool.Server, r.Tool.Name, clip(string(args), 2000))
	if r.Tool.Description != "" {
		msg += "\n\nThe tool says of itself: " + clip(r.Tool.Description, 500)
	}
	msg += "\n\nAn \"always allow\" answer holds for " + identity.Describe(caller) +
		", in every conversation, until the server restarts (it is kept in the server's memory only)."
	return &mcp.ElicitParams{
		Mode:    "form",
		Message: msg,
		RequestedSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"decision": map[string]any{
					"type":  "string",
					"title": "Allow this tool call?",
					"oneOf": []any{
						map[string]any{"const": choiceOnce, "title": "Allow once"},
						map[string]any{"const": choiceTool, "title": "Always allow " + r.Tool.Tool + " (until the server restarts)"},
						map[string]any{"const": choiceServer, "title": "Always allow every tool of " + r.Tool.Server + " (until the server restarts)"},
						map[string]any{"const": choiceDecline, "title": "Decline"},
					},
				},
			},
			"required": []string{"decision"},
		},
	}
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// decision reads the user's answer: anything but an accepted allow is a
// refusal.
func decision(res *mcp.ElicitResult) backend.Decision {
	if res == nil || res.Action != "accept" {
		return backend.Decline
	}
	switch res.Content["decision"] {
	case choiceOnce:
		return backend.AllowOnce
	case choiceTool:
		return backend.AllowTool
	case choiceServer:
		return backend.AllowServer
	}
	return backend.Decline
}

// canElicit says whether the client that made req declared form
// elicitation (an empty elicitation capability means form, for clients
// older than the modes).
func canElicit(req *mcp.CallToolRequest) bool {
	if req == nil || req.Session == nil {
		return false
	}
	caps := req.ClientCapabilities()
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	return caps.Elicitation.Form != nil || caps.Elicitation.URL == nil
}

// usesMRTR says whether req came under a protocol where the server asks
// through the result rather than with a request of its own.
func usesMRTR(req *mcp.CallToolRequest) bool { return req.ProtocolVersion() >= protocolMRTR }

// elicitAsk asks through an elicitation/create request (protocols before
// 2026-07-28).
func elicitAsk(req *mcp.CallToolRequest) Asker {
	return func(ctx context.Context, _ string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return req.Session.Elicit(ctx, p)
	}
}

// confirmThrough is the Turn.Confirm that asks caller's user with ask.
func confirmThrough(ask Asker, caller string) backend.Confirm {
	return func(ctx context.Context, r backend.ConfirmRequest) (backend.Decision, error) {
		res, err := ask(ctx, confirmInputID, confirmParams(r, caller))
		if err != nil {
			return backend.Decline, err
		}
		return decision(res), nil
	}
}

// outcome is a turn's tool result, or why it failed.
type outcome struct {
	res *mcp.CallToolResult
	err error
}

func failed(err error) outcome { return outcome{err: err} }

// turnFunc runs a turn, its Confirm set, and builds its result, whose
// renderer may ask the client's user with ask (nil: it cannot be asked).
type turnFunc func(ctx context.Context, call backend.Turn, ask Asker) (*mcp.CallToolResult, error)

// confirmed runs the turn call of c with turn, on a ctx ended also with
// the server and the call's HTTP request (bind), its Confirm set to ask
// the user of the client that made req, when it can be asked, with the
// grants of that caller's users; the turn's renderer may ask the same way.
// req is the call's request, for what only the tool call carries: how its
// client may be asked. A turn h may hand over to a job past --job-after
// (nil: none) is run by handOver.
func (d *Service) confirmed(ctx context.Context, req *mcp.CallToolRequest, c Call, call backend.Turn, turn turnFunc, h *handover) (*mcp.CallToolResult, error) {
	ctx, cancel := d.bind(ctx, c)
	defer cancel()
	if call.Session != "" && (req == nil || req.Params == nil || req.Params.RequestState == "") {
		if n := d.pending.supersede(c.Who.Key(), call.Session); n > 0 {
			d.o.Log.Info("a new call on the session withdrew the tool confirmation left unanswered", "session", call.Session)
		}
	}
	var ask Asker
	switch {
	case !canElicit(req):
		// Untrusted downstream tools run only if the operator allows them.
	case usesMRTR(req):
		out := d.runMRTR(ctx, req, c, call, turn)
		return out.res, out.err
	default:
		ask = elicitAsk(req)
		if h != nil {
			ask = h.ask(ask)
		}
		call.Confirm = d.grants.confirmFor(c.Who.Caller, confirmThrough(ask, c.Who.Caller))
	}
	if h != nil {
		return d.handOver(ctx, h, call, turn, ask)
	}
	return turn(ctx, call, ask)
}

// suspended is a turn waiting for a 2026-07-28 client to bring its user's
// answer in a later call.
type suspended struct {
	client  string             // who may answer: identity.Who.Key()
	caller  string             // and the identity.Who.Caller of the call that started the turn
	session string             // the session the turn continues, "" for a new one
	asks    chan ask           // from the turn: a question to put
	done    chan outcome       // the turn's result (buffered)
	cancel  context.CancelFunc // stops the turn
	mu      sync.Mutex
	cur     *ask        // the question out, once returned to the client
	timer   *time.Timer // stops the turn when the client does not come back
}

type ask struct {
	id     string
	params *mcp.ElicitParams
	reply  chan *mcp.ElicitResult // buffered
}

// ask is the Asker of a suspendable turn: it hands the question to
// whichever call of the client is waiting, and waits for the answer.
func (s *suspended) ask(ctx context.Context, id string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	a := ask{id: id, params: p, reply: make(chan *mcp.ElicitResult, 1)}
	select {
	case s.asks <- a:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case res := <-a.reply:
		return res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// pendingTurns are the suspended turns, by request state.
type pendingTurns struct{ m sync.Map }

// supersede stops the turns of client on session that wait for an answer.
// A 2026-07-28 client that gives up while its user is asked never says
// so: it just does not call again. Its turn would hold the session (which
// runs one turn at a time) until the wait ends; a new call of the same
// client on the same session shows that the client has moved on.
func (p *pendingTurns) supersede(client, session string) int {
	n := 0
	p.m.Range(func(state, v any) bool {
		s := v.(*suspended)
		if s.client != client || s.session != session {
			return true
		}
		if _, ok := p.m.LoadAndDelete(state); ok {
			s.mu.Lock()
			s.timer.Stop()
			s.mu.Unlock()
			s.cancel()
			n++
		}
		return true
	})
	return n
}

// runMRTR runs a turn whose confirmations go through the tool result: it
// starts the turn (or, for a call carrying a request state, resumes the one
// suspended under it) and returns its result, or the next question.
func (d *Service) runMRTR(ctx context.Context, req *mcp.CallToolRequest, c Call, call backend.Turn, turn turnFunc) outcome {
	who, caller := c.Who.Key(), c.Who.Caller
	if state := req.Params.RequestState; state != "" {
		// Only the caller asked may answer: another one's answer leaves
		// the question in place, and is told no more than of an unknown
		// one.
		v, ok := d.pending.m.Load(state)
		if ok && (v.(*suspended).client != who || v.(*suspended).caller != caller) {
			d.o.Log.Warn("refused an answer to a tool confirmation from another client than the one asked", "caller", caller)
			ok = false
		}
		if ok {
			ok = d.pending.m.CompareAndDelete(state, v)
		}
		if !ok {
			return failed(errors.New("this call answers a tool confirmation that is unknown here or has expired " +
				"(a turn waits " + d.confirmWait().String() + " for the answer); send the prompt again"))
		}
		s := v.(*suspended)
		s.mu.Lock()
		s.timer.Stop()
		a := s.cur
		s.cur = nil
		s.mu.Unlock()
		var res *mcp.ElicitResult
		if r, ok := req.Params.InputResponses[a.id].(*mcp.ElicitResult); ok {
			res = r
		}
		a.reply <- res
		return d.await(ctx, s)
	}

	// The turn outlives this call, which ends at the first question: it
	// runs on a context of its own, stopped with the server, by a call of
	// the client that is cancelled, or when the client does not come back.
	tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	if life := d.o.Lifetime; life != nil {
		stop := context.AfterFunc(life, cancel)
		go func() { <-tctx.Done(); stop() }()
	}
	s := &suspended{client: who, caller: caller, session: call.Session, asks: make(chan ask), done: make(chan outcome, 1), cancel: cancel}
	call.Confirm = d.grants.confirmFor(caller, confirmThrough(s.ask, caller))
	go func() {
		res, err := turn(tctx, call, s.ask)
		s.done <- outcome{res: res, err: err}
	}()
	return d.await(ctx, s)
}

// await waits, for the call ctx, until the turn ends or asks a question;
// a question goes back to the client as an input request, and the turn
// stays suspended under a new request state.
func (d *Service) await(ctx context.Context, s *suspended) outcome {
	select {
	case res := <-s.done:
		s.cancel()
		return res
	case a := <-s.asks:
		state := newState()
		s.mu.Lock()
		s.cur = &a
		// Stored before the timer starts, so that a timer that fires at
		// once finds the turn to stop; supersede, which may find it first,
		// takes s.mu before it stops the timer.
		d.pending.m.Store(state, s)
		s.timer = time.AfterFunc(d.confirmWait(), func() {
			if _, ok := d.pending.m.LoadAndDelete(state); ok {
				d.o.Log.Info("tool confirmation not answered in time; turn stopped", "wait", d.confirmWait())
				s.cancel()
			}
		})
		s.mu.Unlock()
		d.o.Log.Info("asking the client's user through the result", "question", a.id)
		return outcome{res: &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{a.id: a.params},
			RequestState:  state,
		}}
	case <-ctx.Done():
		s.cancel()
		<-s.done
		return failed(fmt.Errorf("the call was cancelled: %w", context.Cause(ctx)))
	}
}

func (d *Service) confirmWait() time.Duration {
	if d.o.ConfirmWait > 0 {
		return d.o.ConfirmWait
	}
	return DefaultConfirmWait
}

// newState returns an unguessable request state: it names a suspended
// turn, and whoever holds it may answer for the user.
func newState() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

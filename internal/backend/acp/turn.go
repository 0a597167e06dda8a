package acp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// The requests of a turn on one process: a new session, its model, its
// prompt.

// errCreating says a spare was not made because a call was creating a
// session: a spare never makes a call wait for the session-creation lock.
var errCreating = errors.New("a call is creating a session")

// newSession creates a session in dir and returns its id. With try set (a
// spare), it gives up at once with errCreating when another session/new
// holds the lock, rather than queue before a call that may come.
func (a *agent) newSession(ctx context.Context, dir string, try bool) (string, error) {
	if try {
		if !a.newMu.TryLock() {
			return "", errCreating
		}
	} else if err := a.newMu.Lock(ctx); err != nil {
		return "", err
	}
	defer a.newMu.Unlock()
	var res struct {
		SessionID string `json:"sessionId"`
		Models    struct {
			CurrentModelID string `json:"currentModelId"`
		} `json:"models"`
	}
	if err := a.conn.call(ctx, "session/new", map[string]any{"cwd": dir, "mcpServers": []any{}}, &res); err != nil {
		return "", err
	}
	if !session.IsUUID(res.SessionID) {
		return "", fmt.Errorf("gemini --acp returned an invalid session id %q", res.SessionID)
	}
	id := strings.ToLower(res.SessionID)
	a.mu.Lock()
	a.sessions++
	if a.defaultModel == "" {
		a.defaultModel = res.Models.CurrentModelID
	}
	a.models[id] = ""
	a.mu.Unlock()
	return id, nil
}

// setModel makes model ("" for the agent's default) the session's model,
// if it is not already.
func (a *agent) setModel(ctx context.Context, id, model string) error {
	a.mu.Lock()
	cur, def := a.models[id], a.defaultModel
	a.mu.Unlock()
	if cur == model {
		return nil
	}
	target := model
	if target == "" {
		if def == "" {
			return nil
		}
		target = def
	}
	if err := a.conn.call(ctx, "session/set_model", map[string]any{"sessionId": id, "modelId": target}, nil); err != nil {
		return err
	}
	a.mu.Lock()
	a.models[id] = model
	a.mu.Unlock()
	return nil
}

// prompt runs one turn on session id and returns the answer text, and the
// tokens it cost when the agent says (nil otherwise). When ctx
// ends it cancels the turn (session/cancel) and gives the agent grace to
// confirm; an agent that does not is killed.
func (a *agent) prompt(ctx context.Context, id, text string, obs backend.Observer, grace time.Duration) (answer string, usage *backend.Usage, reason string, err error) {
	sub := &promptSub{obs: obs, tooBig: make(chan struct{})}
	a.mu.Lock()
	a.subs[id] = sub
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.subs, id)
		a.prompts++
		a.mu.Unlock()
	}()
	type result struct {
		StopReason string `json:"stopReason"`
		Meta       struct {
			Quota struct {
				TokenCount *struct {
					InputTokens  int `json:"input_tokens"`
					OutputTokens int `json:"output_tokens"`
				} `json:"token_count"`
			} `json:"quota"`
		} `json:"_meta"`
	}
	done := make(chan error, 1)
	var res result
	// The request runs on its own context: ending ctx must cancel the turn
	// through the protocol, not abandon the response.
	callCtx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		done <- a.conn.call(callCtx, "session/prompt", map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "text", "text": text}}}, &res)
	}()
	// stopTurn cancels the turn and waits for the agent to confirm.
	stopTurn := func() {
		_ = a.conn.notify("session/cancel", map[string]any{"sessionId": id})
		select {
		case <-done:
		case <-time.After(grace):
			a.log.Warn("warm gemini process ignored session/cancel; stopping it", "pid", a.conn.pid())
			a.conn.kill()
			<-done
		}
	}
	select {
	case err = <-done:
	case <-ctx.Done():
		stopTurn()
		return "", nil, "", ctx.Err()
	case <-sub.tooBig:
		stopTurn()
		return "", nil, "", errOutputTooBig
	}
	select {
	case <-sub.tooBig:
		// The whole answer arrived before the cancel could matter.
		return "", nil, "", errOutputTooBig
	default:
	}
	if err != nil {
		return "", nil, "", err
	}
	if res.StopReason == "cancelled" {
		return "", nil, "", errors.New("the turn was cancelled by gemini")
	}
	sub.mu.Lock()
	defer sub.mu.Unlock()
	if tc := res.Meta.Quota.TokenCount; tc != nil {
		usage = &backend.Usage{PromptTokens: tc.InputTokens, OutputTokens: tc.OutputTokens}
	}
	return sub.text.String(), usage, res.StopReason, nil
}

// stopped applies the stopReason of a turn (ACP's end_turn, max_tokens,
// max_turn_requests, refusal; cancelled is an error before this) to its
// answer ans. The Gemini CLI 0.61 ends a turn with end_turn also when the
// model stopped at its output limit (MAX_TOKENS) after some text: that is
// not seen here. It sends max_tokens when the conversation would overflow
// the model's context window, and max_turn_requests when its loop
// detector or its limit on a session's turns stopped the turn: what came
// is given, said to be cut, and the session (which the CLI keeps) goes on
// from it. A refusal fails the call; an unknown reason is said as a cut.
func stopped(ans *backend.Answer, stop string) *backend.Error {
	var why string
	switch stop {
	case "", "end_turn":
		return nil
	case "refusal":
		return &backend.Error{Kind: backend.KindEmpty, Reason: "Gemini refused to answer (stopReason refusal); rephrase the prompt"}
	case "max_tokens":
		why = "the conversation would overflow the model's context window (stopReason max_tokens); start a new " +
			"session, summarising this one"
	case "max_turn_requests":
		why = "the Gemini CLI stopped the turn: its loop detector, or its limit on a session's turns, ended it " +
			"(stopReason max_turn_requests)"
	default:
		why = "the Gemini CLI ended the turn with stopReason " + stop
	}
	ans.Incomplete = "The answer may be cut short: " + why + ". The Gemini CLI keeps the turn in its session: " +
		"chat-reply with sessionId " + ans.SessionID + " goes on from it."
	ans.IncompleteKept, ans.FinishReason = true, stop
	return nil
}

package acp

import (
	"encoding/json"
	"fmt"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
)

// What the agent sends unasked: a running prompt's session/update
// notifications, and its requests (permission, file system, terminal).

// sessionUpdate is the part of a session/update notification used here.
type sessionUpdate struct {
	SessionID string `json:"sessionId"`
	Update    struct {
		SessionUpdate string `json:"sessionUpdate"`
		Content       struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Title  string `json:"title"`
		Kind   string `json:"kind"`
		Status string `json:"status"`
	} `json:"update"`
}

func (a *agent) notification(m rpcMessage) {
	if m.Method != "session/update" {
		return
	}
	var u sessionUpdate
	if json.Unmarshal(m.Params, &u) != nil {
		return
	}
	a.mu.Lock()
	sub := a.subs[u.SessionID]
	a.mu.Unlock()
	if sub == nil {
		return // a replay after session/load, or an update between prompts
	}
	sub.mu.Lock()
	obs := sub.obs
	switch u.Update.SessionUpdate {
	case "agent_message_chunk":
		if sub.overflow {
			sub.mu.Unlock()
			return
		}
		if u.Update.Content.Type == "" || u.Update.Content.Type == "text" {
			if sub.text.Len()+len(u.Update.Content.Text) > a.maxOutput {
				sub.overflowed()
				sub.mu.Unlock()
				return
			}
			sub.text.WriteString(u.Update.Content.Text)
		}
		n, soFar := sub.text.Len(), sub.text.String()
		sub.mu.Unlock()
		if obs != nil {
			backend.AnswerSoFar(obs, soFar)
		}
		activity(obs, fmt.Sprintf("gemini is answering (%d bytes so far)", n))
		return
	case "tool_call":
		sub.mu.Unlock()
		activity(obs, "gemini is running a tool: "+msg.Clip(u.Update.Title, 120))
		return
	}
	sub.mu.Unlock()
}

// request answers the agent's requests: permission by the server's
// policy, anything else (file system, terminal: not offered) with an error.
func (a *agent) request(m rpcMessage) (json.RawMessage, *rpcError) {
	switch m.Method {
	case "session/request_permission":
		var req struct {
			SessionID string `json:"sessionId"`
			ToolCall  struct {
				Title string `json:"title"`
			} `json:"toolCall"`
			Options []struct {
				OptionID string `json:"optionId"`
				Kind     string `json:"kind"`
			} `json:"options"`
		}
		_ = json.Unmarshal(m.Params, &req)
		outcome := map[string]any{"outcome": "cancelled"}
		want := map[string]bool{"reject_once": true, "reject_always": true}
		if a.allow {
			want = map[string]bool{"allow_once": true}
		}
		for _, o := range req.Options {
			if want[o.Kind] || (!a.allow && o.OptionID == "cancel") || (a.allow && o.OptionID == "proceed_once") {
				outcome = map[string]any{"outcome": "selected", "optionId": o.OptionID}
				break
			}
		}
		a.log.Info("answered a permission request", "tool", req.ToolCall.Title, "allowed", a.allow, "outcome", outcome)
		result, _ := json.Marshal(map[string]any{"outcome": outcome})
		return result, nil
	}
	return nil, &rpcError{Code: -32601, Message: "not offered by gemini-mcp-server: " + m.Method}
}

func activity(obs backend.Observer, msg string) {
	if obs != nil {
		obs.Activity(msg)
	}
}

package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

// acpSession is a session that an --acp process holds in memory. Like the real CLI's, it is
// never freed, and it is written to the same store as one-shot sessions, so either mode can
// continue what the other started.
type acpSession struct {
	store store

	mu   sync.Mutex
	data *session
	// wiped counts the turns at the start of data.Turns that are no longer on disk: upstream bug
	// #28775 wiped the stored session while this process held it, and the process then writes only
	// the turns that came after.
	wiped int
	// model is what session/set_model chose, "" for none; mode is the current mode.
	model string
	mode  string
	// run is the prompt in progress, nil when there is none.
	run *promptRun
	// chats is the session's file in the real CLI's layout (see chatLog), nil if none.
	chats *chatLog
}

// save writes the session's turns that are still the store's business.
func (a *acpSession) save() error {
	stored := *a.data
	stored.Turns = append([]turn{}, a.data.Turns[a.wiped:]...)
	stored.Empty = len(stored.Turns) == 0
	if !stored.Empty && stored.Title == "" {
		stored.Title = geminitest.SessionTitle(stored.Turns[0].Prompt)
	}
	return a.store.save(&stored)
}

// modelID is the session's currentModelId: session/set_model's, else the process's, else "auto".
func (s *acpServer) modelID(a *acpSession) string {
	switch {
	case a.model != "":
		return a.model
	case s.model != "":
		return s.model
	default:
		return geminitest.ACPAutoModel
	}
}

// answerModel is the model that the session's answers name: its currentModelId, with the fake's
// default model for "auto" (none chosen, or "auto" chosen, which in the real CLI both mean that
// its router picks a model), as a one-shot run without a model does.
func (s *acpServer) answerModel(a *acpSession) string {
	if m := s.modelID(a); m != geminitest.ACPAutoModel {
		return m
	}
	return geminitest.DefaultModel
}

// sessionState is the modes and models part of session/new's and session/load's answers.
func (s *acpServer) sessionState(a *acpSession) sessionResult {
	return sessionResult{
		Modes:  modesState{AvailableModes: availableModesJSON, CurrentModeID: a.mode},
		Models: modelsState{AvailableModels: availableModelsJSON, CurrentModelID: s.modelID(a)},
	}
}

// lookup returns the session with id, or nil.
func (s *acpServer) lookup(id string) *acpSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

// newSession answers session/new {cwd, mcpServers}: a new session, stored at once (without
// turns, so that nothing lists it yet) and keyed by cwd.
func (s *acpServer) newSession(m rpcIncoming) {
	var p struct {
		Cwd string `json:"cwd"`
	}
	if rerr := s.checkSessionParams(m.Params, &p, [2]string{"cwd", "string"}); rerr != nil {
		s.respond(m.ID, nil, rerr)
		return
	}
	if os.Getenv(geminitest.EnvNoAPIKey) == "1" {
		s.respond(m.ID, nil, &rpcError{Code: geminitest.ACPAuthRequiredCode, Message: geminitest.ACPNoAPIKeyMessage})
		return
	}
	st, err := openStore(p.Cwd)
	if err != nil {
		s.respond(m.ID, nil, internalError(err.Error()))
		return
	}
	a := &acpSession{store: st, data: st.start(newUUID(), ""), mode: s.mode}
	if err := a.save(); err != nil {
		s.respond(m.ID, nil, internalError(err.Error()))
		return
	}
	a.chats = newChatLog(a.data.ID, p.Cwd)
	s.mu.Lock()
	s.sessions[a.data.ID] = a
	s.mu.Unlock()
	result := s.sessionState(a)
	result.SessionID = a.data.ID
	s.respond(m.ID, result, nil)
	s.notify(a.data.ID, availableCommandsUpdate{SessionUpdate: "available_commands_update", AvailableCommands: availableCommandsJSON})
}

// checkSessionParams fails like the real CLI when the system prompt file is missing, then
// validates params.
func (s *acpServer) checkSessionParams(params json.RawMessage, v any, want ...[2]string) *rpcError {
	if s.systemErr != "" {
		return internalError(s.systemErr)
	}
	return checkParams(params, v, want...)
}

// loadSession answers session/load {sessionId, cwd, mcpServers}: it reads the session from the
// store and replays its history. Like the real CLI, it answers right after the first replayed
// update and replays the rest after the answer.
//
// It mirrors upstream bug google-gemini/gemini-cli#28775: loading a session in the clock minute
// in which it was created wipes its stored turns and fails as if the session did not exist. A
// process that holds that session live keeps its turns in memory.
func (s *acpServer) loadSession(m rpcIncoming) {
	var p struct {
		SessionID string `json:"sessionId"`
		Cwd       string `json:"cwd"`
	}
	if rerr := s.checkSessionParams(m.Params, &p, [2]string{"sessionId", "string"}, [2]string{"cwd", "string"}); rerr != nil {
		s.respond(m.ID, nil, rerr)
		return
	}
	sess, rerr := s.findStored(p.SessionID, p.Cwd)
	if rerr != nil {
		s.respond(m.ID, nil, rerr)
		return
	}
	st, _ := openStore(p.Cwd)
	a := &acpSession{store: st, data: sess, mode: s.mode}
	s.mu.Lock()
	s.sessions[sess.ID] = a
	s.mu.Unlock()

	updates := s.replay(a)
	s.notify(sess.ID, updates[0])
	s.respond(m.ID, s.sessionState(a), nil)
	for _, u := range updates[1:] {
		s.notify(sess.ID, u)
	}
	s.notify(sess.ID, availableCommandsUpdate{SessionUpdate: "available_commands_update", AvailableCommands: availableCommandsJSON})
}

// findStored finds the session id among those stored for cwd, applying upstream bug #28775.
func (s *acpServer) findStored(id, cwd string) (*session, *rpcError) {
	st, err := openStore(cwd)
	if err != nil {
		return nil, internalError(err.Error())
	}
	sessions, err := st.load()
	if err != nil {
		return nil, internalError(err.Error())
	}
	if sess := pick(sessions, id); sess != nil && sameMinute(sess.created, now()) {
		if err := s.wipe(st, sess); err != nil {
			return nil, internalError(err.Error())
		}
		sessions = slices.DeleteFunc(sessions, func(x *session) bool { return x == sess })
	}
	if len(sessions) == 0 {
		return nil, internalError(geminitest.ACPNoSessionsMessage)
	}
	sess := pick(sessions, id)
	if sess == nil {
		return nil, internalError(fmt.Sprintf("Invalid session identifier \"%s\".\n"+
			"  Searched for sessions in %s.\n"+
			"  Use --list-sessions to see available sessions, then use --resume {number}, --resume {uuid}, or --resume latest.",
			id, st.dir))
	}
	return sess, nil
}

// wipe empties the stored session, and tells a live copy of it in this process that its turns
// so far are gone from the store.
func (s *acpServer) wipe(st store, sess *session) error {
	if live := s.lookup(sess.ID); live != nil && live.store.dir == st.dir {
		live.mu.Lock()
		defer live.mu.Unlock()
		live.wiped = len(live.data.Turns)
	}
	sess.Turns, sess.Empty = []turn{}, true
	return st.save(sess)
}

// replay returns the updates that replay a loaded session: the real CLI's hidden first user
// message, then for each turn the prompt, the tool call and its result when [[tool:NAME]] made
// one, and the answer.
func (s *acpServer) replay(a *acpSession) []any {
	updates := []any{userChunk(sessionContext(a.store.cwd))}
	for i, t := range a.data.Turns {
		updates = append(updates, userChunk(t.Prompt))
		if t.Tool != "" {
			updates = append(updates, toolCall{
				SessionUpdate: "tool_call", ToolCallID: toolCallID(t.Tool), Status: "completed",
				Title: t.Tool, Content: []any{toolOutput(t.Tool)}, Kind: toolKind(t.Tool),
			}, userChunk("[Function Response: "+t.Tool+"]"))
		}
		if text := t.answer(i + 1); text != "" {
			updates = append(updates, agentChunk(text))
		}
	}
	return updates
}

// sessionContext is the fake's version of the context message that the real CLI puts first in
// every session's history, and replays on session/load.
func sessionContext(cwd string) string {
	return "<session_context>\nThis is the fake Gemini CLI. We are setting up the context for our chat.\n" +
		"- **Workspace Directories:**\n  - " + cwd + "\n</session_context>"
}

// userChunk and agentChunk are message chunk updates.
func userChunk(text string) textChunk {
	return textChunk{SessionUpdate: "user_message_chunk", Content: textContent{Type: "text", Text: text}}
}

func agentChunk(text string) textChunk {
	return textChunk{SessionUpdate: "agent_message_chunk", Content: textContent{Type: "text", Text: text}}
}

// setModel answers session/set_model {sessionId, modelId}. Like the real CLI it does not check
// the model; it applies from the session's next prompt on and overrides -m.
func (s *acpServer) setModel(params json.RawMessage) (any, *rpcError) {
	var p struct {
		SessionID string `json:"sessionId"`
		ModelID   string `json:"modelId"`
	}
	if rerr := checkParams(params, &p, [2]string{"sessionId", "string"}, [2]string{"modelId", "string"}); rerr != nil {
		return nil, rerr
	}
	a := s.lookup(p.SessionID)
	if a == nil {
		return nil, sessionNotFound(p.SessionID)
	}
	a.mu.Lock()
	a.model = p.ModelID
	a.mu.Unlock()
	return struct{}{}, nil
}

// setMode answers session/set_mode {sessionId, modeId}. A change of mode is announced first with
// an agent_message_chunk "[MODE_UPDATE] MODE", as the real CLI does.
func (s *acpServer) setMode(params json.RawMessage) (any, *rpcError) {
	var p struct {
		SessionID string `json:"sessionId"`
		ModeID    string `json:"modeId"`
	}
	if rerr := checkParams(params, &p, [2]string{"sessionId", "string"}, [2]string{"modeId", "string"}); rerr != nil {
		return nil, rerr
	}
	a := s.lookup(p.SessionID)
	if a == nil {
		return nil, sessionNotFound(p.SessionID)
	}
	if !slices.Contains(validModes, p.ModeID) {
		return nil, internalError("Invalid or unavailable mode: " + p.ModeID)
	}
	a.mu.Lock()
	changed := a.mode != p.ModeID
	a.mode = p.ModeID
	a.mu.Unlock()
	if changed {
		s.notify(p.SessionID, agentChunk(geminitest.ACPModeUpdatePrefix+p.ModeID))
	}
	return struct{}{}, nil
}

// cancel handles the notification session/cancel {sessionId}: the session's pending prompt, if
// any, answers cancelled.
func (s *acpServer) cancel(params json.RawMessage) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	a := s.lookup(p.SessionID)
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.run != nil {
		a.run.cancel()
	}
}

// toolKind is the ACP kind of a tool call, by the real CLI's tool names.
func toolKind(name string) string {
	switch {
	case name == "write_file" || name == "replace":
		return "edit"
	case name == "run_shell_command":
		return "execute"
	case strings.HasPrefix(name, "read_"):
		return "read"
	case name == "list_directory" || name == "glob" || strings.Contains(name, "search"):
		return "search"
	case name == "web_fetch":
		return "fetch"
	default:
		return "other"
	}
}

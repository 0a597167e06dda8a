package main

import (
	"encoding/json"
	"fmt"
)

// The JSON-RPC and ACP shapes of the --acp mode, as captured from the real CLI 0.61.0 (see
// ../testdata/acp-transcript.jsonl). Field order follows the real CLI's output.

// rpcIncoming is any message the client sends: a request (method and id), a notification (method,
// no id) or a response to one of the agent's requests (id and result or error).
type rpcIncoming struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// hasID reports whether the message carries an id; JSON-RPC notifications carry none.
func (m *rpcIncoming) hasID() bool { return len(m.ID) > 0 && string(m.ID) != "null" }

// rpcResponse is the agent's answer to a request.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// rpcRequest is a request or, without ID, a notification from the agent.
type rpcRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      *int   `json:"id,omitempty"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// JSON-RPC error codes the real CLI uses.
const (
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternal       = -32603
)

// internalError is the real CLI's wrapper for most failures: code -32603, message
// "Internal error" and the reason in data.details.
func internalError(details string) *rpcError {
	return &rpcError{Code: codeInternal, Message: "Internal error", Data: map[string]string{"details": details}}
}

// sessionNotFound answers a request naming a session the process does not hold.
func sessionNotFound(id string) *rpcError {
	return &rpcError{Code: codeInvalidParams, Message: "Session not found: " + id}
}

// methodNotFound answers an unknown method.
func methodNotFound(method string) *rpcError {
	return &rpcError{Code: codeMethodNotFound, Message: `"Method not found": ` + method,
		Data: map[string]string{"method": method}}
}

// zodIssue is one entry of the validation error the real CLI's schema library (zod) reports.
type zodIssue struct {
	Expected string   `json:"expected"`
	Code     string   `json:"code"`
	Path     []string `json:"path"`
	Message  string   `json:"message"`
}

// invalidParams answers params that fail validation, as the real CLI does: code -32603 with the
// list of zod issues as data.
func invalidParams(issues []zodIssue) *rpcError {
	return &rpcError{Code: codeInternal, Message: "Internal error", Data: issues}
}

// checkParams validates that params holds each field of want with the JSON type named ("string"
// or "array"), and decodes params into v. It returns nil when all is well.
func checkParams(params json.RawMessage, v any, want ...[2]string) *rpcError {
	var fields map[string]json.RawMessage
	if len(params) > 0 {
		json.Unmarshal(params, &fields)
	}
	var issues []zodIssue
	for _, w := range want {
		name, typ := w[0], w[1]
		if got := jsonType(fields[name]); got != typ {
			issues = append(issues, zodIssue{Expected: typ, Code: "invalid_type", Path: []string{name},
				Message: fmt.Sprintf("Invalid input: expected %s, received %s", typ, got)})
		}
	}
	if issues != nil {
		return invalidParams(issues)
	}
	if err := json.Unmarshal(params, v); err != nil {
		return internalError(err.Error())
	}
	return nil
}

// jsonType names the type of a JSON value as zod reports it.
func jsonType(v json.RawMessage) string {
	if len(v) == 0 {
		return "undefined"
	}
	switch v[0] {
	case '"':
		return "string"
	case '[':
		return "array"
	case '{':
		return "object"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	default:
		return "number"
	}
}

// initializeResult answers initialize.
type initializeResult struct {
	ProtocolVersion   int             `json:"protocolVersion"`
	AuthMethods       json.RawMessage `json:"authMethods"`
	AgentInfo         agentInfo       `json:"agentInfo"`
	AgentCapabilities json.RawMessage `json:"agentCapabilities"`
}

type agentInfo struct {
	Name    string `json:"name"`
	Title   string `json:"title"`
	Version string `json:"version"`
}

// sessionResult answers session/new (with SessionID) and session/load (without).
type sessionResult struct {
	SessionID string      `json:"sessionId,omitempty"`
	Modes     modesState  `json:"modes"`
	Models    modelsState `json:"models"`
}

type modesState struct {
	AvailableModes json.RawMessage `json:"availableModes"`
	CurrentModeID  string          `json:"currentModeId"`
}

type modelsState struct {
	AvailableModels json.RawMessage `json:"availableModels"`
	CurrentModelID  string          `json:"currentModelId"`
}

// promptResult answers session/prompt. Meta is left out of cancelled turns, as in the real CLI.
type promptResult struct {
	StopReason string      `json:"stopReason"`
	Meta       *promptMeta `json:"_meta,omitempty"`
}

type promptMeta struct {
	Quota quota `json:"quota"`
}

type quota struct {
	TokenCount tokenCount   `json:"token_count"`
	ModelUsage []modelUsage `json:"model_usage"`
}

type tokenCount struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

type modelUsage struct {
	Model      string     `json:"model"`
	TokenCount tokenCount `json:"token_count"`
}

// endTurn is the answer to a prompt that completed with model.
func endTurn(model string) promptResult {
	one := tokenCount{InputTokens: 1, OutputTokens: 1}
	return promptResult{StopReason: "end_turn", Meta: &promptMeta{Quota: quota{
		TokenCount: one,
		ModelUsage: []modelUsage{{Model: model, TokenCount: one}},
	}}}
}

// sessionUpdate is the params of a session/update notification.
type sessionUpdate struct {
	SessionID string `json:"sessionId"`
	Update    any    `json:"update"`
}

// textChunk is a user_message_chunk or agent_message_chunk update.
type textChunk struct {
	SessionUpdate string      `json:"sessionUpdate"`
	Content       textContent `json:"content"`
}

type textContent struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// toolCall is the tool_call and tool_call_update updates, and the toolCall of a permission
// request. Locations is left out of replayed tool calls, as in the real CLI.
type toolCall struct {
	SessionUpdate string         `json:"sessionUpdate,omitempty"`
	ToolCallID    string         `json:"toolCallId"`
	Status        string         `json:"status"`
	Title         string         `json:"title"`
	Content       []any          `json:"content"`
	Locations     *[]rpcLocation `json:"locations,omitempty"`
	Kind          string         `json:"kind"`
}

type rpcLocation struct {
	Path string `json:"path"`
}

// toolTextContent is a tool call's text output.
type toolTextContent struct {
	Type    string      `json:"type"`
	Content textContent `json:"content"`
}

// toolDiffContent is a file edit that a tool call proposes or made.
type toolDiffContent struct {
	Type    string            `json:"type"`
	Path    string            `json:"path"`
	OldText string            `json:"oldText"`
	NewText string            `json:"newText"`
	Meta    map[string]string `json:"_meta,omitempty"`
}

// permissionParams is the params of session/request_permission.
type permissionParams struct {
	SessionID string          `json:"sessionId"`
	Options   json.RawMessage `json:"options"`
	ToolCall  toolCall        `json:"toolCall"`
}

// permissionAnswer is the result a client returns for session/request_permission.
type permissionAnswer struct {
	Outcome struct {
		Outcome  string `json:"outcome"`
		OptionID string `json:"optionId"`
	} `json:"outcome"`
}

// availableCommandsUpdate is the update the real CLI sends, unasked, after session/new and
// session/load.
type availableCommandsUpdate struct {
	SessionUpdate     string          `json:"sessionUpdate"`
	AvailableCommands json.RawMessage `json:"availableCommands"`
}

// Static parts of the real CLI's answers, verbatim.
var (
	authMethodsJSON       = json.RawMessage(`[{"id":"oauth-personal","name":"Log in with Google","description":"Log in with your Google account"},{"id":"gemini-api-key","name":"Gemini API key","description":"Use an API key with Gemini Developer API","_meta":{"api-key":{"provider":"google"}}},{"id":"vertex-ai","name":"Vertex AI","description":"Use an API key with Vertex AI GenAI API"},{"id":"gateway","name":"AI API Gateway","description":"Use a custom AI API Gateway","_meta":{"gateway":{"protocol":"google","restartRequired":"false"}}}]`)
	agentCapabilitiesJSON = json.RawMessage(`{"loadSession":true,"promptCapabilities":{"image":true,"audio":true,"embeddedContext":true},"mcpCapabilities":{"http":true,"sse":true}}`)
	availableModesJSON    = json.RawMessage(`[{"id":"default","name":"Default","description":"Prompts for approval"},{"id":"autoEdit","name":"Auto Edit","description":"Auto-approves edit tools"},{"id":"yolo","name":"YOLO","description":"Auto-approves all tools"},{"id":"plan","name":"Plan","description":"Read-only mode"}]`)
	availableModelsJSON   = json.RawMessage(`[{"modelId":"auto","name":"Auto","description":"Let Gemini CLI decide the best model for the task: gemini-3.1-pro-preview, gemini-3.8-flash"},{"modelId":"gemini-3.1-pro-preview-customtools","name":"gemini-3.1-pro-preview"},{"modelId":"gemini-3-flash-preview","name":"gemini-3-flash-preview"},{"modelId":"gemini-2.5-pro","name":"gemini-2.5-pro"},{"modelId":"gemini-3.8-flash","name":"gemini-3.8-flash"},{"modelId":"gemini-3.5-flash-lite","name":"gemini-3.5-flash-lite"}]`)
	availableCommandsJSON = json.RawMessage(`[{"name":"memory","description":"Manage memory."},{"name":"memory show","description":"Shows the current memory contents."},{"name":"memory refresh","description":"Refreshes the memory from the source."},{"name":"memory list","description":"Lists the paths of the GEMINI.md files in use."},{"name":"memory inbox","description":"Lists memory items extracted from past sessions that are pending review."},{"name":"extensions","description":"Manage extensions."},{"name":"extensions list","description":"Lists all installed extensions."},{"name":"extensions explore","description":"Explore available extensions."},{"name":"extensions enable","description":"Enable an extension."},{"name":"extensions disable","description":"Disable an extension."},{"name":"extensions install","description":"Install an extension from a git repo or local path."},{"name":"extensions link","description":"Link an extension from a local path."},{"name":"extensions uninstall","description":"Uninstall an extension."},{"name":"extensions restart","description":"Restart an extension."},{"name":"extensions update","description":"Update an extension."},{"name":"init","description":"Analyzes the project and creates a tailored GEMINI.md file"},{"name":"restore","description":"Restore to a previous checkpoint, or list available checkpoints to restore. This will reset the conversation and file history to the state it was in when the checkpoint was created"},{"name":"restore list","description":"Lists all available checkpoints."},{"name":"about","description":"Show version and environment info"},{"name":"help","description":"Show available commands"}]`)
	permissionOptionsJSON = json.RawMessage(`[{"optionId":"proceed_always","name":"Allow for this session","kind":"allow_always"},{"optionId":"proceed_once","name":"Allow","kind":"allow_once"},{"optionId":"cancel","name":"Reject","kind":"reject_once"}]`)
)

// validModes are the mode ids session/set_mode accepts.
var validModes = []string{"default", "autoEdit", "yolo", "plan"}

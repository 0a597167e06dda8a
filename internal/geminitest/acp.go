package geminitest

import (
	"encoding/json"
	"time"
)

// Environment variables of the fake's long-lived mode (gemini --acp) and of its clock.
const (
	// EnvACPLog names a file to which an --acp process appends one JSON line for every message it
	// receives from its client (see [ACPMessage]).
	EnvACPLog = "FAKE_GEMINI_ACP_LOG"
	// EnvNowOffset is a Go duration, possibly negative, added to the fake's clock. The clock dates
	// new sessions and decides which session loads fall into upstream bug #28775 (see
	// [ACPNoSessionsMessage]). Pinning a process near the start of a minute makes that bug
	// deterministic: an offset of time.Until(the next whole minute) puts the process's clock at
	// second 0 of a minute, so it stays in that minute for the next 60 s of real time.
	EnvNowOffset = "FAKE_GEMINI_NOW_OFFSET"
	// EnvNowOffsetFile names a file holding a Go duration (empty or missing means 0) that is added
	// to the clock on top of EnvNowOffset. The fake reads it whenever it looks at the clock, so a
	// test can move the clock of processes that are already running, for example past the minute
	// in which they created a session.
	EnvNowOffsetFile = "FAKE_GEMINI_NOW_OFFSET_FILE"
	// EnvNoAPIKey set to 1 makes the fake behave as the real CLI does without credentials: a
	// one-shot run fails with exit code 41 as [[exit:41]] does; an --acp process starts and
	// answers initialize, then answers every session/new with the JSON-RPC error
	// {code: ACPAuthRequiredCode, message: ACPNoAPIKeyMessage}.
	EnvNoAPIKey = "FAKE_GEMINI_NO_API_KEY"
)

// Values of the fake's --acp mode that tests compare against.
const (
	// ACPProtocolVersion is the protocolVersion that initialize answers.
	ACPProtocolVersion = 1
	// ACPAutoModel is the currentModelId of a session when neither -m, GEMINI_MODEL nor
	// session/set_model names a model, as in the real CLI. The answer text then names
	// [DefaultModel], as a one-shot run without a model does.
	ACPAutoModel = "auto"
	// ACPNoSessionsMessage is the data.details of the error that session/load answers when the
	// session's working directory holds no (visible) session. Because of upstream bug
	// google-gemini/gemini-cli#28775 this is also what loading a session created in the current
	// clock minute gives when it was the only session there; with other sessions present the
	// details are "Invalid session identifier ..." instead. Either way the load wipes the stored
	// turns of that session.
	ACPNoSessionsMessage = "No previous sessions found for this project."
	// ACPModeUpdatePrefix starts the agent_message_chunk text that session/set_mode sends, before
	// its answer, when it changes the mode: "[MODE_UPDATE] yolo".
	ACPModeUpdatePrefix = "[MODE_UPDATE] "
	// ACPAuthRequiredCode and ACPNoAPIKeyMessage are the error that the real CLI's session/new
	// answers when it has no credentials (measured on 0.61.0 with no GEMINI_API_KEY).
	ACPAuthRequiredCode = -32000
	ACPNoAPIKeyMessage  = "Gemini API key is missing or not configured."
)

// AnswerWithPermission returns the text of a prompt with the [[permission]] directive: answer,
// the prompt's usual answer (see [Answer]), followed by " permission=" and outcome. outcome is the
// optionId the client selected, "cancelled" when it answered {outcome: {outcome: "cancelled"}}
// or with an error, or the session's mode ("yolo", "autoEdit") when that mode approved the
// write without asking.
func AnswerWithPermission(answer, outcome string) string {
	return answer + " permission=" + outcome
}

// ACPMessage is one line of the log named by [EnvACPLog]: a message an --acp process received on
// its stdin. A request has Method and ID, a notification only Method, and a response to one of
// the agent's own requests (session/request_permission) ID and Result or Error. A line that was
// not a JSON object is logged in Raw.
type ACPMessage struct {
	// Pid is the receiving process.
	Pid int `json:"pid"`
	// Time is when the process read the line.
	Time   time.Time       `json:"time"`
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
	Raw    string          `json:"raw,omitempty"`
}

// SessionID returns params.sessionId, or "" when the message has none.
func (m ACPMessage) SessionID() string {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	if len(m.Params) == 0 || json.Unmarshal(m.Params, &p) != nil {
		return ""
	}
	return p.SessionID
}

// ReadACPLog returns the messages logged in the file at path, oldest first. A file that does not
// exist means that no --acp process received anything, so ReadACPLog returns no messages and no
// error for it.
func ReadACPLog(path string) ([]ACPMessage, error) {
	return readJSONL[ACPMessage](path, "fake gemini ACP log")
}

package acp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
)

// errorMap turns a warm error into the call's *backend.Error, with the
// limits its messages name.
type errorMap struct {
	timeout   time.Duration // a turn's limit (Options.Timeout)
	maxOutput int           // an answer's cap (Options.MaxOutputBytes)
}

// of is err as the call's *backend.Error.
func (m errorMap) of(err error) error {
	var re *rpcError
	switch {
	case errors.As(err, &re):
		return classifyRPC(re)
	case errors.Is(err, context.DeadlineExceeded):
		return geminicli.CallTimeoutError(m.timeout).SetRan(warmStderr)
	case errors.Is(err, context.Canceled):
		return geminicli.CancelledError("the call was cancelled before gemini finished, and gemini was stopped", err).SetRan(warmStderr)
	case errors.Is(err, errOutputTooBig):
		return geminicli.OutputTooBigError(m.maxOutput).SetRan(warmStderr)
	case errors.Is(err, errProcessGone):
		// err says how the process ended, after errProcessGone's text.
		how := strings.TrimPrefix(err.Error(), errProcessGone.Error())
		return geminicli.FailedError("the warm gemini process exited during the call"+how+". Its sessions continue through one-shot resume; try again", err).SetRan(warmStderr)
	}
	return geminicli.FailedError("gemini --acp failed: "+err.Error()+". "+warmFailedHelp, err).SetRan(warmStderr)
}

// warmStderr stands where a one-shot failure shows the CLI's stderr: a
// warm process's stderr is shared by every session it serves, so none of
// it goes into one call's result (it is in the server's log at debug).
const warmStderr = "(none: the call ran in a warm gemini --acp process)"

// acpAuthRequired is ACP's error code for missing credentials: the CLI
// starts without them, and answers session/new with it.
const acpAuthRequired = -32000

// classifyRPC maps an ACP error to the same kinds and reasons as the
// one-shot path. API failures carry the HTTP status as their code; no
// process exited, so the reasons name no exit code.
func classifyRPC(re *rpcError) *backend.Error {
	var e *backend.Error
	switch {
	case re.Code == acpAuthRequired:
		e = geminicli.AuthError(re.Message, "")
	case geminicli.IsHTTPStatus(re.Code):
		out := &geminicli.Output{Error: &geminicli.OutputError{Type: "Error", Message: re.Message, Code: []byte(fmt.Sprint(re.Code))}}
		msg, status := geminicli.FailureMessage(out, "")
		e = geminicli.APIError(status, msg, "")
	default:
		e = geminicli.FailedError("gemini --acp failed: "+re.Error()+". "+warmFailedHelp, nil)
	}
	e.Err = re
	return e.SetRan(warmStderr)
}

// warmFailedHelp says what to do about a warm failure the CLI did not
// explain.
const warmFailedHelp = "Try again; if it persists, run the server with --backend oneshot, " +
	"whose errors carry the CLI's stderr"

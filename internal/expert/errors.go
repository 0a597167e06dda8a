package expert

import (
	"errors"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
)

// The expert tools fail with JSON-RPC errors in the categories of their
// specification: the tool layer's error vocabulary (toolerr.Error,
// toolerr.WireError), shared with the chat tools.

// turnError says what a failure of Answer means for the caller.
// b is what of the API's own tools the turn asked for.
func turnError(err error, b backend.Builtins) error {
	switch {
	case errors.Is(err, conversation.ErrWaitCancelled):
		return &toolerr.Error{Category: toolerr.ToolFailure, Msg: err.Error() + "; nothing was sent to Gemini. Call the tool again.", Err: err}
	case errors.Is(err, backend.ErrNoBuiltins):
		// An argument this server's backend cannot honour: the caller's
		// to change, not a failure of Gemini's.
		field := "google_search"
		if !b.GoogleSearch && b.CodeExecution {
			field = "code_execution"
		}
		return &toolerr.Error{Category: toolerr.Validation, Field: field, Msg: err.Error(), Err: err}
	case errors.Is(err, conversation.ErrTurnLimit):
		return &toolerr.Error{Category: toolerr.ToolFailure, Field: "continuation_id", Msg: err.Error() +
			". Start a new thread (omit continuation_id), giving it what it needs of this one.", Err: err}
	}
	return err
}

package conversation

import (
	"errors"
)

// ErrWaitCancelled is matched by Do's error when the call ended while it waited
// for an earlier call on the same session.
var ErrWaitCancelled = errors.New("the call was cancelled while waiting for an earlier call on the same session")

// ErrTurnLimit is wrapped by Do's error when the session has reached
// --max-turns.
var ErrTurnLimit = errors.New("the session has reached its turn limit")

// turnLimitError is a refusal at --max-turns: its message says what to
// do, and it matches ErrTurnLimit.
type turnLimitError struct{ error }

func (turnLimitError) Is(target error) bool { return target == ErrTurnLimit }

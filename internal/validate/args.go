package validate

import (
	"bytes"
	"encoding/json"
	"sync/atomic"
)

// decodes counts the calls of Arguments, for the test that a tool call's
// arguments are decoded once.
var decodes atomic.Int64

// Decodes is how many times Arguments has decoded a call's arguments
// since the process started. Every tool decodes its arguments through
// Arguments, once per call, and reads each argument's value from what it
// returns straight into the field of its input struct.
func Decodes() int64 { return decodes.Load() }

// Arguments decodes raw, a tool call's arguments, into the arguments by
// name; none (empty or null) is no argument. An error means raw is not a
// JSON object.
func Arguments(raw json.RawMessage) (map[string]json.RawMessage, error) {
	decodes.Add(1)
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, err
	}
	return args, nil
}

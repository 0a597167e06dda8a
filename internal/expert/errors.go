package expert

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/tools"
)

// Category is one of the expert tools' error categories, as its JSON-RPC code.
type Category int64

// The expert tools' error categories, from their specification.
const (
	// Security: a path outside the sandbox, an unauthorized file.
	Security Category = -32001
	// Validation: a missing or malformed argument.
	Validation Category = jsonrpc.CodeInvalidParams
	// ToolFailure: Gemini's error, exhausted resources.
	ToolFailure Category = jsonrpc.CodeInternalError
	// System: the session store down, the file system, the configuration.
	System Category = -32000
)

func (c Category) String() string {
	switch c {
	case Security:
		return "security error"
	case Validation:
		return "invalid params"
	case ToolFailure:
		return "tool failure"
	case System:
		return "system error"
	}
	return fmt.Sprintf("error %d", int64(c))
}

// FieldError is one entry of a validation error's data.validation_errors.
type FieldError struct {
	Field string `json:"field"`
	Error string `json:"error"`
}

// Error is an expert tool's failure in one of the expert tools' error categories. The
// file-context hooks return it (or wrap it) to choose the category of
// their errors; any other error of theirs is a tool failure.
type Error struct {
	Category Category
	// Field names the argument at fault, if any: a validation error lists
	// it in data.validation_errors, a security error in data.field.
	Field string
	// Msg says what went wrong and what to do.
	Msg string
	// Data is added to the JSON-RPC error's data.
	Data map[string]any
	Err  error // the cause, if any
}

func (e *Error) Error() string { return e.Msg }
func (e *Error) Unwrap() error { return e.Err }

// SecurityError is a security error on field.
func SecurityError(field, msg string) *Error {
	return &Error{Category: Security, Field: field, Msg: msg}
}

// ValidationError is a validation error on field.
func ValidationError(field, msg string) *Error {
	return &Error{Category: Validation, Field: field, Msg: msg}
}

// SystemError is a system failure.
func SystemError(msg string, err error) *Error {
	return &Error{Category: System, Msg: msg, Err: err}
}

// validationErrors is one validation error for several fields.
type validationErrors []FieldError

func (v validationErrors) Error() string {
	parts := make([]string, len(v))
	for i, f := range v {
		parts[i] = f.Field + ": " + f.Error
	}
	return strings.Join(parts, "; ")
}

// classify puts err in its category. Errors of the session store are
// system failures whatever the step that met them; the backend's are tool
// failures.
func classify(err error) (Category, string) {
	var e *Error
	var v validationErrors
	switch {
	case errors.As(err, &v):
		return Validation, ""
	case errors.As(err, &e):
		return e.Category, e.Field
	case errors.Is(err, session.ErrUnavailable):
		return System, ""
	}
	return ToolFailure, ""
}

// wireError turns err into the JSON-RPC error the client receives: the
// code of its category; a message that starts with the category and says
// what to do; and data with validation_errors for validation errors.
func wireError(err error) *jsonrpc.Error {
	cat, field := classify(err)
	data := map[string]any{"category": categoryName(cat)}
	var v validationErrors
	var e *Error
	switch {
	case errors.As(err, &v):
		data["validation_errors"] = []FieldError(v)
	case cat == Validation:
		f := field
		if f == "" {
			f = "arguments"
		}
		data["validation_errors"] = []FieldError{{Field: f, Error: err.Error()}}
	case field != "":
		data["field"] = field
	}
	if errors.As(err, &e) {
		for k, val := range e.Data {
			data[k] = val
		}
	}
	msg := err.Error()
	var ge *backend.Error
	if errors.As(err, &ge) && ge.Ran && ge.Stderr != "" {
		data["stderr"] = ge.Stderr
	}
	raw, jerr := json.Marshal(data)
	if jerr != nil {
		raw = nil
	}
	return &jsonrpc.Error{Code: int64(cat), Message: capitalize(cat.String()) + ": " + msg, Data: raw}
}

func categoryName(c Category) string {
	switch c {
	case Security:
		return "security"
	case Validation:
		return "validation"
	case ToolFailure:
		return "tool"
	case System:
		return "system"
	}
	return "unknown"
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// turnError says what a failure of Answer means for the caller.
func turnError(err error) error {
	switch {
	case errors.Is(err, tools.ErrWaitCancelled):
		return &Error{Category: ToolFailure, Msg: err.Error() + "; nothing was sent to Gemini. Call the tool again.", Err: err}
	case errors.Is(err, tools.ErrTurnLimit):
		return &Error{Category: ToolFailure, Field: "continuation_id", Msg: err.Error() +
			". Start a new thread (omit continuation_id), giving it what it needs of this one.", Err: err}
	}
	return err
}

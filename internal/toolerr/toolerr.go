// Package toolerr is the tool layer's error vocabulary. The chat tools
// answer a failure with an error result whose text starts with ErrorPrefix
// (Failure); the expert tools with a JSON-RPC error in one of the expert
// tools' categories (WireError). Both come from the same errors: the
// pipeline's (conversation.ErrWaitCancelled, conversation.ErrTurnLimit,
// StoreError) and *Error, which gives an error its category.
package toolerr

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
	clip "github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
)

// ErrorPrefix starts the text of every failed call of the chat tools, as
// the tool specification requires.
const ErrorPrefix = "Error executing gemini: "

// StoreError turns an error of the session store into what the caller
// needs: when the store itself failed (it is down, its disk full), that
// the call can be retried, since nothing reached Gemini. Other errors (a
// bad id) pass as they are.
func StoreError(err error) error {
	if errors.Is(err, session.ErrUnavailable) {
		return fmt.Errorf("the session store is unavailable (%w), so nothing was sent to Gemini. The call can be retried: "+
			"it will work once the store is back (the server's operator can check it with gemini-mcp-server doctor)", err)
	}
	return err
}

// Failure builds a chat tool's isError result: the prefix, the reason
// and, when the CLI ran, the tail of its stderr.
func Failure(err error) *mcp.CallToolResult {
	text := ErrorPrefix + err.Error()
	var ge *backend.Error
	if errors.As(err, &ge) && ge.Ran {
		text += "\nStderr: " + ge.Stderr
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// Category is one of the expert tools' error categories, as its JSON-RPC
// code.
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

// Name is the category as data.category names it.
func (c Category) Name() string {
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

// FieldError is one entry of a validation error's data.validation_errors.
type FieldError struct {
	Field string `json:"field"`
	Error string `json:"error"`
}

// Error is a failure in one of the categories. Any other error is a tool
// failure, a system failure when it wraps session.ErrUnavailable, or, for
// the file context's (*filectx.Error), in the category it names.
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

// ValidationErrors is one validation error for several fields.
type ValidationErrors []FieldError

func (v ValidationErrors) Error() string {
	parts := make([]string, len(v))
	for i, f := range v {
		parts[i] = f.Field + ": " + f.Error
	}
	return strings.Join(parts, "; ")
}

// Classify puts err in its category, with the field at fault. The file
// context's errors (*filectx.Error) carry theirs; a system failure is the
// server's, so no field is at fault. Errors of the session store are
// system failures whatever the step that met them; the backend's are tool
// failures.
func Classify(err error) (Category, string) {
	var e *Error
	var v ValidationErrors
	var fe *filectx.Error
	switch {
	case errors.As(err, &v):
		return Validation, ""
	case errors.As(err, &e):
		return e.Category, e.Field
	case errors.As(err, &fe):
		cat := fileCategory(fe.Category)
		if cat == System {
			return System, ""
		}
		return cat, fe.Field
	case errors.Is(err, session.ErrUnavailable):
		return System, ""
	}
	return ToolFailure, ""
}

// WireError turns err into the JSON-RPC error an expert tool's client
// receives: the code of its category; a message that starts with the
// category and says what to do; and data with validation_errors for
// validation errors.
func WireError(err error) *jsonrpc.Error {
	cat, field := Classify(err)
	data := map[string]any{"category": cat.Name()}
	var v ValidationErrors
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
	var fe *filectx.Error
	switch {
	case errors.As(err, &e):
		for k, val := range e.Data {
			data[k] = val
		}
	case errors.As(err, &fe) && fe.Entry != "":
		// Clipped as the message quotes it: an entry of a megabyte names
		// no file.
		data["entry"] = clip.Clip(fe.Entry, 200)
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

// fileCategory is the category of a file context error's.
func fileCategory(c filectx.Category) Category {
	switch c {
	case filectx.CategorySecurity:
		return Security
	case filectx.CategoryValidation:
		return Validation
	case filectx.CategoryTool:
		return ToolFailure
	}
	return System
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

package filectx

import "fmt"

// Category is the kind of failure, in the expert tools' error categories; the
// tools turn it into a JSON-RPC error code with Code.
type Category string

// The expert tools' error categories.
const (
	// CategorySecurity: a path outside the sandbox, a device file, the
	// server's own state.
	CategorySecurity Category = "security"
	// CategoryValidation: a bad files entry, too many files, a file over
	// the size limit.
	CategoryValidation Category = "validation"
	// CategoryTool: the token counter failed.
	CategoryTool Category = "tool"
	// CategorySystem: the file system failed (an unreadable directory or
	// file that the caller named).
	CategorySystem Category = "system"
)

// Code returns the JSON-RPC error code the expert tools' specification gives the category.
func (c Category) Code() int64 {
	switch c {
	case CategorySecurity:
		return -32001
	case CategoryValidation:
		return -32602
	case CategoryTool:
		return -32603
	default:
		return -32000
	}
}

// Error is a refused or failed files entry. Message says what happened and
// what to do; Entry is the entry as the caller wrote it ("" when the error
// is about the request as a whole).
type Error struct {
	Category Category
	Field    string // the tool argument at fault: "files"
	Entry    string
	Message  string
	Err      error // the cause, if any
}

func (e *Error) Error() string { return e.Message }

func (e *Error) Unwrap() error { return e.Err }

func securityError(entry, format string, args ...any) *Error {
	return &Error{Category: CategorySecurity, Field: "files", Entry: entry, Message: fmt.Sprintf(format, args...)}
}

func validationError(entry, format string, args ...any) *Error {
	return &Error{Category: CategoryValidation, Field: "files", Entry: entry, Message: fmt.Sprintf(format, args...)}
}

func systemError(entry string, err error, format string, args ...any) *Error {
	return &Error{Category: CategorySystem, Field: "files", Entry: entry, Message: fmt.Sprintf(format, args...), Err: err}
}

package expert

import (
	"context"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
)

// Common are the arguments every expert tool takes, embedded in each
// tool's input struct.
type Common struct {
	ThinkingMode   string   `json:"thinking_mode"`
	ContinuationID string   `json:"continuation_id,omitempty"`
	Temperature    *float64 `json:"temperature,omitempty"`
}

// Search is the google_search argument of the tools that take it
// (thinkdeep, debug), embedded in their input structs.
type Search struct {
	GoogleSearch bool `json:"google_search"`
}

func (s *Search) search() bool { return s.GoogleSearch }

// searcher is an input struct with Search.
type searcher interface{ search() bool }

// Sandbox is the code_execution argument of the tools that take it
// (debug, analyze), embedded in their input structs.
type Sandbox struct {
	CodeExecution bool `json:"code_execution"`
}

func (s *Sandbox) sandbox() bool { return s.CodeExecution }

// coder is an input struct with Sandbox.
type coder interface{ sandbox() bool }

func (c *Common) common() *Common { return c }

// input is a tool's input struct, decoded from its arguments once they
// are checked against its schema (see parseArgs). Its json names are the
// schema's properties.
type input interface {
	common() *Common
	// headline is what the session's title starts from: the tool's
	// main argument.
	headline() string
	// gather reads what the turn sends Gemini beside the arguments, for
	// a turn of thread id ("" for a new one).
	gather(ctx context.Context, d *Deps, id string) (*material, error)
}

// material is what a turn sends Gemini beside its arguments.
type material struct {
	files *filectx.Files
	// heading heads the files' section of the prompt.
	heading string
	// preface is a section of the prompt before the secrets and files.
	preface string
	// secrets are the secrets the changes add (precommit), masked.
	secrets []string
	// cut says what of the changes was not sent (precommit).
	cut string
	// record is set when the files are noted as sent in the thread, so
	// that its next turns do not send them again.
	record bool
}

// gatherFiles reads the files or directories entries name, for a tool
// that takes files.
func (d *Deps) gatherFiles(ctx context.Context, id string, entries []string) (*material, error) {
	c := &material{files: &filectx.Files{}, heading: "Files", record: true}
	if len(entries) == 0 {
		return c, nil
	}
	if d.Files == nil {
		return nil, conversation.SystemError("this server cannot read project files yet (no file context is configured): ask its operator, or paste the code into the request instead", nil)
	}
	files, err := d.Files.Gather(ctx, id, entries)
	if err != nil {
		return nil, err
	}
	c.files = files
	return c, nil
}

package expert

import (
	"context"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
)

// Common are the arguments every expert tool takes, embedded in each
// tool's input struct. continuation_id is written in the specification for
// analyze and chat only; every tool takes it here, since any tool must be
// able to continue a thread another one started. temperature is the
// specification's chat argument, taken by every tool as by chat, so that
// the API backend can apply it. thinking_mode's values and default, and
// temperature's range, are added to the schema by commonSchema.
type Common struct {
	ThinkingMode   string   `json:"thinking_mode,omitempty" jsonschema:"How much Gemini may think before it answers. On the Gemini API backend it becomes a thinking budget or level; the Gemini CLI backends cannot set it per call, answer without it and say so in _meta.notApplied."`
	ContinuationID string   `json:"continuation_id,omitempty" jsonschema:"Thread continuation ID for multi-turn conversations: the continuation ID of an earlier result of any of this server's tools. Gemini then sees that conversation's history, and files already sent in it are not sent again. Omit it to start a new thread."`
	Temperature    *float64 `json:"temperature,omitempty" jsonschema:"Optional: the sampling temperature, from 0 to 2. Omit it for the model's default. Applied by the Gemini API backend; the Gemini CLI backends answer without it and say so in _meta.notApplied."`
}

// Backgrounded is the background argument of the tools that take it
// (thinkdeep, analyze, debug), embedded in their input structs; its
// default, false, is added to the schema by Tool.generate. codereview and
// precommit declare an output schema, which every result of theirs must
// conform to: the result naming a background job cannot, so they run only
// in the foreground.
type Backgrounded struct {
	Background bool `json:"background,omitempty" jsonschema:"Optional: run the call as a background job: the result names the job at once, and the job tool returns its progress and, once done, this call's result (or its error). For long calls a client would give up on."`
}

func (b *Backgrounded) background() bool { return b.Background }

// backgrounder is an input struct with Backgrounded.
type backgrounder interface{ background() bool }

// Search is the google_search argument of the tools that take it
// (thinkdeep, debug), embedded in their input structs; its default,
// false, is added to the schema by searchSchema.
type Search struct {
	GoogleSearch bool `json:"google_search,omitempty" jsonschema:"Optional: ground the answer in a Google Search that Gemini runs itself (Gemini API backend only; the Gemini CLI backends refuse it). The sources follow the answer as a numbered list and as resource_link items, with the queries and the search suggestions in _meta.grounding."`
}

func (s *Search) search() bool { return s.GoogleSearch }

// searcher is an input struct with Search.
type searcher interface{ search() bool }

// Sandbox is the code_execution argument of the tools that take it
// (debug, analyze), embedded in their input structs; its default, false,
// is added to the schema by sandboxSchema.
type Sandbox struct {
	CodeExecution bool `json:"code_execution,omitempty" jsonschema:"Optional: let Gemini write and run Python in Google's sandbox (Gemini API backend only; the Gemini CLI backends refuse it). The code, its outcome and output appear in the answer and in _meta.codeExecution; images it made follow as image items."`
}

func (s *Sandbox) sandbox() bool { return s.CodeExecution }

// coder is an input struct with Sandbox.
type coder interface{ sandbox() bool }

// Retrieval is the file_search argument of the tools that read a
// project (thinkdeep, analyze, codereview, debug, precommit), embedded in their
// input structs; its values and default, off, are added to the schema by
// retrievalSchema.
type Retrieval struct {
	FileSearch string `json:"file_search,omitempty"`
}

func (r *Retrieval) fileSearch() string { return r.FileSearch }

// retriever is an input struct with Retrieval.
type retriever interface{ fileSearch() string }

func (c *Common) common() *Common { return c }

// input is a tool's input struct, which its arguments are decoded into
// (see decodeArgs) and its input schema generated from (see
// Tool.schema): its fields' json names are the schema's properties, in
// their order, their jsonschema tags the descriptions; a field without
// omitempty is a required argument.
type input interface {
	common() *Common
	// headline is what the session's title starts from: the tool's
	// main argument.
	headline() string
	// sections are the arguments the prompt sent to Gemini gives, under
	// their labels, in the order of the schema (see Tool.userPrompt).
	sections() []section
	// gather reads what the turn sends Gemini beside the arguments, for
	// a turn of thread id ("" for a new one).
	gather(ctx context.Context, d *Deps, id string) (*material, error)
}

// section is an argument as the prompt gives it: its text under a
// label. Tuning, files and ids are not sections.
type section struct{ label, text string }

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
		return nil, toolerr.SystemError("this server cannot read project files yet (no file context is configured): ask its operator, or paste the code into the request instead", nil)
	}
	files, err := d.Files.Gather(ctx, id, entries)
	if err != nil {
		return nil, err
	}
	c.files = files
	return c, nil
}

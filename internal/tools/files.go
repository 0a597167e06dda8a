package tools

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filesearch/attach"
)

// This file gives chat and chat-reply the expert tools' optional files and
// continuation_id arguments: files are read by the file context the
// server plugs in (Deps.Files), the same as the expert tools', so that a
// thread skips the files any of its tools already sent.

// FileContext is the file context chat and chat-reply read (a
// *filectx.Service, shared with the expert tools): Gather reads a turn's
// files, skipping what the conversation was already sent, and Record
// notes what a turn sent once Gemini has answered.
type FileContext interface {
	Gather(ctx context.Context, sessionID string, entries []string) (*filectx.Files, error)
	Record(ctx context.Context, sessionID string, f *filectx.Files) error
}

// errNoFiles is chat's answer to files on a server without file context.
var errNoFiles = errors.New("this server reads no project files (it has no file context): paste the code into the prompt instead")

// continuationID reconciles chat-reply's sessionId with the expert
// tools' continuation_id, its alias.
// Only the empty string is absent: a blank id is passed on, to be refused
// as the non-id it is rather than taken for "the latest".
func continuationID(sessionID, contID string) (string, error) {
	switch {
	case contID == "":
		return sessionID, nil
	case sessionID == "" || strings.TrimSpace(sessionID) == strings.TrimSpace(contID):
		return contID, nil
	}
	return "", errors.New("sessionId and continuation_id name different sessions: continuation_id is another name for sessionId; pass one of them")
}

// withFiles gives r its files (when it names any: they are read, once
// the session is known, and put before the prompt), the project root's
// File Search store when fileSearch asks for it, and its renderer.
func (d *Deps) withFiles(r *conversation.Request, prompt string, entries []string, schema json.RawMessage, fileSearch string) {
	var files *filectx.Files
	var search *attach.Use
	if fileSearch != "" && fileSearch != attach.Off && len(entries) == 0 {
		// No files to send: the store alone.
		r.Gather = func(ctx context.Context, _ string) (conversation.Material, error) {
			search = d.FileSearch.Plan(fileSearch, d.ProjectRoot, false)
			return conversation.Material{Prompt: prompt, Prepare: prepare(search)}, nil
		}
	}
	if len(entries) > 0 {
		r.Gather = func(ctx context.Context, session string) (conversation.Material, error) {
			for _, e := range entries {
				if strings.TrimSpace(e) == "" {
					return conversation.Material{}, errors.New("a files entry is empty: name a file or directory inside the project root, or leave the entry out")
				}
			}
			if d.Files == nil {
				return conversation.Material{}, errNoFiles
			}
			f, err := d.Files.Gather(ctx, session, entries)
			if err != nil {
				return conversation.Material{}, err
			}
			files = f
			search = d.FileSearch.Plan(fileSearch, d.ProjectRoot, attach.Overflowed(f))
			m := conversation.Material{Prompt: prompt, Media: f.Media, Sent: f, Record: d.Files.Record, Prepare: prepare(search)}
			if f.Text != "" {
				// The files go first, as a context the API backend may
				// cache for the conversation's later turns
				// (Turn.ContextLen).
				text := "## Files\n" + f.Text + "\n\n"
				m.Prompt = text + "## Prompt\n" + prompt
				m.ContextLen = len(text)
			}
			return m, nil
		}
	}
	r.Render = func(ctx context.Context, o conversation.Outcome) (*mcp.CallToolResult, error) {
		var structured map[string]any
		if len(schema) > 0 && o.Answer.Incomplete == "" {
			var err error
			if structured, err = checkStructured(ctx, o.Answer, schema); err != nil {
				return nil, err
			}
		}
		out := d.result(ctx, o)
		if structured != nil {
			out.StructuredContent = structured
		}
		if files != nil {
			if out.Meta == nil {
				out.Meta = mcp.Meta{}
			}
			out.Meta["filesProcessed"] = notes(files.Processed)
			out.Meta["filesSkipped"] = notes(files.Skipped)
		}
		search.Render(out, o.Answer)
		return out, nil
	}
}

// prepare is the turn's index of the project root for File Search (or
// the drop of its store) that u planned: nil for none. The turn runs it,
// so that a background call's job does it (conversation.Material.Prepare).
func prepare(u *attach.Use) func(context.Context) ([]string, error) {
	if u == nil {
		return nil
	}
	return func(ctx context.Context) ([]string, error) {
		if err := u.Run(ctx); err != nil {
			return nil, err
		}
		return u.Stores(), nil
	}
}

// notes lists n for chat's _meta, never nil: each file's path and, when
// it was left out or had lines withheld, why (chat's results name no
// hashes).
func notes(n []filectx.FileNote) []filectx.FileNote {
	out := make([]filectx.FileNote, len(n))
	for i, f := range n {
		out[i] = filectx.FileNote{Path: f.Path, Reason: f.Reason}
	}
	return out
}

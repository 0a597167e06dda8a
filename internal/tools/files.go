package tools

import (
	"context"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
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

// withFiles reads the call's files (when it names any) and puts them
// before the prompt.
func (d *Deps) withFiles(ctx context.Context, call *backend.Turn, entries []string) (*filectx.Files, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	for _, e := range entries {
		if strings.TrimSpace(e) == "" {
			return nil, errors.New("a files entry is empty: name a file or directory inside the project root, or leave the entry out")
		}
	}
	if d.Files == nil {
		return nil, errNoFiles
	}
	f, err := d.Files.Gather(ctx, call.Session, entries)
	if err != nil {
		return nil, err
	}
	if f.Text != "" {
		// The files go first, as a context the API backend may cache
		// for the conversation's later turns (Turn.ContextLen).
		files := "## Files\n" + f.Text + "\n\n"
		call.Prompt = files + "## Prompt\n" + call.Prompt
		call.ContextLen = len(files)
	}
	call.Media = append(call.Media, f.Media...)
	return f, nil
}

// finishFiles records the files as sent in the session of the answer
// out is, and adds the files facts to its result's _meta.
func (d *Deps) finishFiles(ctx context.Context, f *filectx.Files, out outcome) {
	if f == nil || out.res.IsError {
		return
	}
	if out.res.Meta == nil {
		out.res.Meta = mcp.Meta{}
	}
	out.res.Meta["filesProcessed"] = notes(f.Processed)
	out.res.Meta["filesSkipped"] = notes(f.Skipped)
	if out.session != "" {
		// At worst the files are sent again next turn.
		if err := d.Files.Record(context.WithoutCancel(ctx), out.session, f); err != nil {
			d.Conv.Log().Warn("recording the files sent", "session", out.session, "err", err)
		}
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

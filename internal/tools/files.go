package tools

import (
	"context"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// This file gives chat and chat-reply the expert tools' optional files and
// continuation_id arguments: files are read by the file context the
// server plugs in (Deps.Files), the same as the expert tools', so that a
// thread skips the files any of its tools already sent.

// FileNote is a file sent to Gemini or left out, with the reason.
type FileNote struct {
	Path   string `json:"path"`
	Reason string `json:"reason,omitempty"`
}

// Files is the file context of one call: the text to send after the
// prompt, what was sent and left out, and Record, which notes the sent
// files as sent in a session once Gemini has answered.
type Files struct {
	Text               string
	Processed, Skipped []FileNote
	Record             func(ctx context.Context, sessionID string)
}

// FilesFunc reads entries (files or directories inside the project root)
// for a turn of session sessionID ("" for a new one), skipping what that
// session was already sent.
type FilesFunc func(ctx context.Context, sessionID string, entries []string) (*Files, error)

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

// withFiles reads the call's files (when it names any) and adds them to
// the prompt.
func (d *Deps) withFiles(ctx context.Context, call *backend.Turn, entries []string) (*Files, error) {
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
	f, err := d.Files(ctx, call.Session, entries)
	if err != nil {
		return nil, err
	}
	if f.Text != "" {
		call.Prompt += "\n\n## Files\n" + f.Text
	}
	return f, nil
}

// finishFiles records the files as sent in the session of the answer
// out is, and adds the files facts to its result's _meta.
func finishFiles(ctx context.Context, f *Files, out outcome) {
	if f == nil || out.res.IsError {
		return
	}
	if out.res.Meta == nil {
		out.res.Meta = mcp.Meta{}
	}
	out.res.Meta["filesProcessed"] = nonNil(f.Processed)
	out.res.Meta["filesSkipped"] = nonNil(f.Skipped)
	if out.session != "" && f.Record != nil {
		f.Record(context.WithoutCancel(ctx), out.session)
	}
}

func nonNil(n []FileNote) []FileNote {
	if n == nil {
		return []FileNote{}
	}
	return n
}

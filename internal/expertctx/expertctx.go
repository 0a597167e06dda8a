// Package expertctx plugs the file context (internal/filectx and its
// gitchanges and secrets packages) into the expert tools' hooks
// (expert.FilesFunc and expert.ChangesFunc), and maps their errors to the
// expert tools' error categories.
package expertctx

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/expert"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx/gitchanges"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx/secrets"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/tools"
)

// Context is the project root and the limits of the file context.
type Context struct {
	// Root is the project root, absolute.
	Root string
	// Forbidden are paths under the root that must never be read: the
	// server's state directory and its session store file.
	Forbidden []string
	// Options are filectx's limits. Its Counter is set per call from
	// Count.
	Options filectx.Options
	// Count counts tokens as the backend's model does (the API backend's
	// countTokens: one request per file packed); nil estimates them
	// (filectx.Estimate, about 4 bytes a token), for the CLI backends,
	// which cannot count.
	Count func(ctx context.Context, text string) (int, error)
	// Git is the git executable ("" means git on PATH).
	Git string
}

// TokenCounting says how the file context counts tokens, for the log.
func (c *Context) TokenCounting() string {
	if c.Count != nil {
		return "counted by the Gemini API (countTokens, one request per file)"
	}
	return "estimated at 4 bytes per token"
}

// Files is the expert tools' FilesFunc.
func (c *Context) Files(ctx context.Context, entries []string, seen expert.Seen) (string, []expert.FileNote, []expert.FileNote, error) {
	opts := c.Options
	if c.Count != nil {
		opts.Counter = func(text string) (int, error) { return c.Count(ctx, text) }
	}
	res, err := filectx.Gather(ctx, c.Root, c.Forbidden, entries, filectx.Seen(seen), opts)
	if err != nil {
		return "", nil, nil, fileError(err)
	}
	processed := make([]expert.FileNote, len(res.Sent))
	for i, s := range res.Sent {
		processed[i] = expert.FileNote{Path: s.Path, Hash: s.Hash}
		if len(s.Secrets) > 0 {
			processed[i].Reason = withheldNote(s.Secrets)
		}
	}
	var skipped []expert.FileNote
	for _, s := range res.Skipped {
		reason := string(s.Reason)
		if s.Detail != "" {
			reason += ": " + s.Detail
		}
		skipped = append(skipped, expert.FileNote{Path: s.Path, Reason: reason})
	}
	if more := res.SkippedTotal - len(res.Skipped); more > 0 {
		skipped = append(skipped, expert.FileNote{Path: fmt.Sprintf("(%d more)", more), Reason: "skipped and not listed; " + byReason(res.SkippedBy)})
	}
	return res.Text, processed, skipped, nil
}

// ChatFiles is chat's and chat-reply's tools.FilesFunc: the same file
// context, skipping what sent records for the session (shared with the
// expert tools, so that a thread never gets a file twice whichever tool
// sent it).
func (c *Context) ChatFiles(sent expert.SentFiles) tools.FilesFunc {
	return func(ctx context.Context, sessionID string, entries []string) (*tools.Files, error) {
		seen := expert.Seen{}
		if sessionID != "" && sent != nil {
			s, err := sent.Sent(ctx, sessionID)
			if err != nil {
				return nil, err
			}
			seen = s
		}
		text, processed, skipped, err := c.Files(ctx, entries, seen)
		if err != nil {
			return nil, err
		}
		f := &tools.Files{Text: text}
		for _, p := range processed {
			f.Processed = append(f.Processed, tools.FileNote{Path: p.Path, Reason: p.Reason})
		}
		for _, s := range skipped {
			f.Skipped = append(f.Skipped, tools.FileNote{Path: s.Path, Reason: s.Reason})
		}
		if sent != nil && len(processed) > 0 {
			f.Record = func(ctx context.Context, id string) {
				// At worst the files are sent again next turn.
				_ = sent.Add(ctx, id, processed)
			}
		}
		return f, nil
	}
}

// withheldNote says which lines of a sent file were withheld and why.
func withheldNote(found []secrets.Finding) string {
	parts := make([]string, len(found))
	for i, f := range found {
		parts[i] = fmt.Sprintf("line %d %s", f.Line, f.Kind)
	}
	return "sent with secrets withheld: " + strings.Join(parts, ", ")
}

// byReason summarises the counts of skipped files by reason.
func byReason(m map[filectx.Reason]int) string {
	var parts []string
	for _, r := range []filectx.Reason{filectx.SkipBudget, filectx.SkipFileLimit, filectx.SkipDuplicate, filectx.SkipTooLarge, filectx.SkipBinary,
		filectx.SkipIgnored, filectx.SkipExcluded, filectx.SkipScanLimit, filectx.SkipSymlink, filectx.SkipOutside, filectx.SkipForbidden,
		filectx.SkipSpecial, filectx.SkipError, filectx.SkipSecret} {
		if m[r] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", r, m[r]))
		}
	}
	return "in all: " + strings.Join(parts, ", ")
}

// Changes is the expert tools' ChangesFunc: the changes of the repository
// at path (resolved inside the sandbox first; gitchanges then refuses a
// repository any part of which lies outside the root), the secrets they
// add found and masked, in the diff sent to Gemini too.
func (c *Context) Changes(ctx context.Context, path string, staged, unstaged bool, _ expert.Seen) (*expert.ChangeSet, error) {
	sb, err := filectx.NewSandbox(c.Root, c.Forbidden)
	if err != nil {
		return nil, fileError(err)
	}
	r, err := sb.Resolve(path)
	if err != nil {
		return nil, pathError(fileError(err))
	}
	if !r.Info.IsDir() {
		return nil, conversation.ValidationError("path", fmt.Sprintf("%s is not a directory: give the root of a git repository inside the project root", path))
	}
	ch, err := gitchanges.Collect(ctx, r.Path, gitchanges.Options{Staged: staged, Unstaged: unstaged, Git: c.Git, Root: sb.Root()})
	if err != nil {
		return nil, gitError(err)
	}
	cs := &expert.ChangeSet{}
	for _, f := range ch.Files {
		note := expert.FileNote{Path: f.Path, Reason: f.Status}
		if f.Staged {
			note.Reason = "staged, " + f.Status
		}
		cs.Processed = append(cs.Processed, note)
	}
	if ch.Omitted > 0 {
		cs.Skipped = append(cs.Skipped, expert.FileNote{Path: fmt.Sprintf("(%d more)", ch.Omitted),
			Reason: fmt.Sprintf("changed and not listed: more than %d files changed", len(ch.Files))})
	}
	diff := ch.Diff()
	for _, f := range secrets.ScanDiff(diff) {
		cs.Secrets = append(cs.Secrets, f.String())
	}
	if ch.Empty() {
		cs.Text = "(no changes: the repository has nothing " + which(staged, unstaged) + " to commit)"
		return cs, nil
	}
	skip := secrets.CredentialFile
	if c.Options.SendSecretFiles {
		skip = nil
	}
	text, withheld := secrets.RedactDiff(diff, skip)
	for _, w := range withheld {
		cs.Skipped = append(cs.Skipped, expert.FileNote{Path: w.Path, Reason: string(filectx.SkipSecret) + ": " + w.Why +
			"; its changes are not sent unless the server runs with --send-secret-files"})
	}
	cs.Text = text
	return cs, nil
}

func which(staged, unstaged bool) string {
	switch {
	case staged && unstaged:
		return "staged or unstaged"
	case staged:
		return "staged"
	}
	return "unstaged"
}

// fileError maps a filectx error to the expert tools' categories.
func fileError(err error) error {
	var fe *filectx.Error
	if !errors.As(err, &fe) {
		return err
	}
	field := fe.Field
	if field == "" {
		field = "files"
	}
	cat := conversation.System
	switch fe.Category {
	case filectx.CategorySecurity:
		cat = conversation.Security
	case filectx.CategoryValidation:
		cat = conversation.Validation
	case filectx.CategoryTool:
		cat = conversation.ToolFailure
	}
	e := &conversation.Error{Category: cat, Field: field, Msg: fe.Message, Err: err}
	if fe.Entry != "" {
		e.Data = map[string]any{"entry": fe.Entry}
	}
	if cat == conversation.System {
		// A system failure is the server's: the field is not at fault.
		e.Field = ""
	}
	return e
}

// pathError puts a sandbox error on precommit's path argument.
func pathError(err error) error {
	var e *conversation.Error
	if errors.As(err, &e) && e.Field != "" {
		e.Field = "path"
	}
	return err
}

// gitError maps a gitchanges error: a path that is not in a repository is
// the caller's (validation), git missing or failing is the server's
// (system), a timeout a tool failure.
func gitError(err error) error {
	var ge *gitchanges.Error
	if !errors.As(err, &ge) {
		return err
	}
	switch ge.Kind {
	case gitchanges.KindNotRepo:
		return &conversation.Error{Category: conversation.Validation, Field: "path", Msg: ge.Message, Err: err}
	case gitchanges.KindOutside:
		return &conversation.Error{Category: conversation.Security, Field: "path", Msg: ge.Message, Err: err}
	case gitchanges.KindTimeout:
		return &conversation.Error{Category: conversation.ToolFailure, Msg: ge.Message, Err: err}
	}
	return conversation.SystemError(ge.Message, err)
}

package filectx

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx/gitchanges"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx/secrets"
)

// FileNote is a file sent to Gemini or left out, as the tools report it;
// Reason says why one was left out ("already sent in this conversation",
// "over the token budget", "binary"…) or what was withheld from one sent.
type FileNote struct {
	Path   string `json:"path"`
	Reason string `json:"reason,omitempty"`
	// Hash fingerprints the content sent (its SHA-256), so that a file
	// changed since is sent again; "" when there is none.
	Hash string `json:"sha256,omitempty"`
}

// Files is the file context of one turn: the text to send after the
// prompt, and what was sent and left out.
type Files struct {
	Text string
	// Media are the images, PDFs, audio and video sent with the text
	// (Options.Media).
	Media              []backend.Media
	Processed, Skipped []FileNote
}

// ChangeSet is what Changes read: the diff text to send, the changed
// files, and the secrets found on the lines the changes add, each
// described with the secret masked. Secrets found make precommit's
// verdict NO-GO whatever Gemini answers: a credential about to be
// committed is a blocker that no review outweighs, and Gemini, which sees
// the secrets masked, could miss one.
type ChangeSet struct {
	Text               string
	Processed, Skipped []FileNote
	Secrets            []string
	// Cut says what of the changes was not sent, to fit the model's
	// input; "" when they were sent whole.
	Cut string
}

// Service is the file context of a server, shared by every tool: chat's
// and chat-reply's files, the expert tools' files and precommit's
// changes. Gather reads a turn's files, skipping what its conversation was
// already sent (Sent), and Record notes what a turn sent once Gemini has
// answered, so that a thread never gets a file twice whichever tool sent
// it. Its errors are *Error, whose category the tools report.
type Service struct {
	// Root is the project root, absolute.
	Root string
	// Forbidden are paths under the root that must never be read: the
	// server's state directory and its session store file.
	Forbidden []string
	// Options are filectx's limits. Its Counter is set per call from
	// Count.
	Options Options
	// Count counts tokens as the backend's model does (the API backend's
	// countTokens: one request per file packed); nil estimates them
	// (Estimate, about 4 bytes a token), for the CLI backends,
	// which cannot count.
	Count func(ctx context.Context, text string) (int, error)
	// Git is the git executable ("" means git on PATH).
	Git string
	// GitAnyOwner lets precommit read a repository another user owns
	// (--precommit-any-owner); see gitchanges.Options.AnyOwner.
	GitAnyOwner bool
	// Sent, when set, keeps the files each conversation was sent.
	Sent SentFiles
}

// TokenCounting says how the file context counts tokens, for the log.
func (c *Service) TokenCounting() string {
	if c.Count != nil {
		return "counted by the Gemini API (countTokens, one request per file)"
	}
	return "estimated at 4 bytes per token"
}

// Gather reads entries (files or directories inside the project root)
// for a turn of conversation sessionID ("" for a new one), skipping what
// that conversation was already sent unless it changed since.
func (c *Service) Gather(ctx context.Context, sessionID string, entries []string) (*Files, error) {
	seen := Seen{}
	if sessionID != "" && c.Sent != nil {
		s, err := c.Sent.Sent(ctx, sessionID)
		if err != nil {
			return nil, err
		}
		seen = s
	}
	opts := c.Options
	if c.Count != nil {
		opts.Counter = func(text string) (int, error) { return c.Count(ctx, text) }
	}
	res, err := Gather(ctx, c.Root, c.Forbidden, entries, seen, opts)
	if err != nil {
		return nil, err
	}
	f := &Files{Text: res.Text, Processed: make([]FileNote, len(res.Sent))}
	for _, m := range res.Media {
		f.Media = append(f.Media, backend.Media{Path: m.Path, Abs: m.Abs, MIMEType: m.MIMEType, Data: m.Data, SHA256: m.Hash})
	}
	for i, s := range res.Sent {
		f.Processed[i] = FileNote{Path: s.Path, Hash: s.Hash}
		if len(s.Secrets) > 0 {
			f.Processed[i].Reason = withheldNote(s.Secrets)
		}
	}
	for _, s := range res.Skipped {
		reason := string(s.Reason)
		if s.Detail != "" {
			reason += ": " + s.Detail
		}
		f.Skipped = append(f.Skipped, FileNote{Path: s.Path, Reason: reason})
	}
	if more := res.SkippedTotal - len(res.Skipped); more > 0 {
		f.Skipped = append(f.Skipped, FileNote{Path: fmt.Sprintf("(%d more)", more), Reason: "skipped and not listed; " + byReason(res.SkippedBy)})
	}
	return f, nil
}

// Record notes the files f sent as sent in conversation sessionID, once
// Gemini has answered. It fails only when Sent does; at worst the files
// are then sent again next turn.
func (c *Service) Record(ctx context.Context, sessionID string, f *Files) error {
	if c.Sent == nil || f == nil || sessionID == "" || len(f.Processed) == 0 {
		return nil
	}
	return c.Sent.Add(ctx, sessionID, f.Processed)
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
func byReason(m map[Reason]int) string {
	var parts []string
	for _, r := range []Reason{SkipBudget, SkipFileLimit, SkipDuplicate, SkipTooLarge, SkipBinary,
		SkipIgnored, SkipExcluded, SkipScanLimit, SkipSymlink, SkipOutside, SkipForbidden,
		SkipSpecial, SkipError, SkipSecret} {
		if m[r] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", r, m[r]))
		}
	}
	return "in all: " + strings.Join(parts, ", ")
}

// Changes is precommit's context: the changes of the repository at path (resolved inside the sandbox first; gitchanges then refuses a
// repository any part of which lies outside the root), the secrets they
// add found and masked, in the diff sent to Gemini too. The diff is cut
// to maxTokens() tokens (asked once there is a diff to send; nil: no bound
// but gitchanges' own), counted as Count counts them, and ChangeSet.Cut
// says what was cut.
func (c *Service) Changes(ctx context.Context, path string, staged, unstaged bool, maxTokens func() int) (*ChangeSet, error) {
	sb, err := NewSandbox(c.Root, c.Forbidden)
	if err != nil {
		return nil, err
	}
	r, err := sb.Resolve(path)
	if err != nil {
		return nil, pathError(err)
	}
	if !r.Info.IsDir() {
		return nil, &Error{Category: CategoryValidation, Field: "path", Message: fmt.Sprintf("%s is not a directory: give the root of a git repository inside the project root", path)}
	}
	ch, err := gitchanges.Collect(ctx, r.Path, gitchanges.Options{Staged: staged, Unstaged: unstaged, Git: c.Git, Root: sb.Root(), AnyOwner: c.GitAnyOwner})
	if err != nil {
		return nil, gitError(err)
	}
	cs := &ChangeSet{}
	for _, f := range ch.Files {
		note := FileNote{Path: f.Path, Reason: f.Status}
		if f.Staged {
			note.Reason = "staged, " + f.Status
		}
		cs.Processed = append(cs.Processed, note)
	}
	if ch.Omitted > 0 {
		cs.Skipped = append(cs.Skipped, FileNote{Path: fmt.Sprintf("(%d more)", ch.Omitted),
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
		cs.Skipped = append(cs.Skipped, FileNote{Path: w.Path, Reason: string(SkipSecret) + ": " + w.Why +
			"; its changes are not sent unless the server runs with --send-secret-files"})
	}
	cs.Text = text
	if ch.Truncated {
		cs.Cut = fmt.Sprintf("the diff is larger than %d bytes, the most this server reads of it: what follows that point was not sent", gitchanges.DefaultMaxBytes)
	}
	if err := c.budgetDiff(ctx, cs, maxTokens); err != nil {
		return nil, err
	}
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

// pathError puts a sandbox error on precommit's path argument.
func pathError(err error) error {
	var e *Error
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
		return &Error{Category: CategoryValidation, Field: "path", Message: ge.Message, Err: err}
	case gitchanges.KindOutside, gitchanges.KindOwner:
		return &Error{Category: CategorySecurity, Field: "path", Message: ge.Message, Err: err}
	case gitchanges.KindTimeout:
		return &Error{Category: CategoryTool, Message: ge.Message, Err: err}
	}
	return &Error{Category: CategorySystem, Message: ge.Message, Err: err}
}

// Package attach is the file_search option of the tools that read a
// project (analyze, codereview, debug, thinkdeep and chat): whether a
// turn gets the project root's File Search store (package filesearch),
// indexing the root first, with progress, on the call's context; and the
// citations of the answer, in the result's text, resource links and
// _meta. It links nothing of the Gemini API: the server hands it an Index
// over package filesearch when its backend is the API backend, and none
// otherwise.
package attach

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/identity"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
)

// The values of file_search.
const (
	// Off sends the files that fit, as without File Search.
	Off = "off"
	// Auto uses the store only when the files the tool would send do not
	// fit the model's input (some were left out for the token budget or
	// the number of files).
	Auto = "auto"
	// On always indexes the project root and uses its store.
	On = "on"
	// Drop deletes the caller's store of the project root, then answers
	// as Off.
	Drop = "drop"
)

// Modes are file_search's values, its default first.
var Modes = []string{Off, Auto, On, Drop}

// Field is the argument's name.
const Field = "file_search"

// Description is the argument's description in the tools' schemas.
const Description = "Optional (Gemini API backend): also search the project root through a File Search store of yours, indexed once, only changes uploaded: " +
	"\"auto\" when the files named do not fit, \"on\" always, \"off\" never (the default), \"drop\" deletes your store. " +
	"The files cited follow the answer, with their lines."

// Report is what an index did.
type Report struct {
	Files     int  `json:"filesIndexed"` // files in the store now
	Uploaded  int  `json:"uploaded"`
	Unchanged int  `json:"unchanged"`
	Deleted   int  `json:"deleted"`
	Skipped   int  `json:"skipped"` // files left out (ignored, binary, secret, limits)
	Recreated bool `json:"recreated,omitempty"`
}

// citeLimit bounds the manifest read of a Use's Render, which has no
// call's context.
const citeLimit = 30 * time.Second

// Index is a server's File Search over the Gemini API.
type Index interface {
	// Index brings the store of root and scope up to date, calling
	// progress with the files done of those to index, and returns its
	// name and what it did.
	Index(ctx context.Context, root, scope string, progress func(done, total int)) (store string, r Report, err error)
	// Drop deletes the store of root and scope, if there is one.
	Drop(ctx context.Context, root, scope string) error
	// Cite turns the File Search chunks of an answer into the files of
	// root they come from: as text, resource links and _meta's list. Only
	// files the store of root and scope holds are read for their lines.
	Cite(ctx context.Context, root, scope string, files []backend.FileSource) (text string, links []*mcp.ResourceLink, meta any)
}

// Service is the file_search option of a server's tools.
type Service struct {
	// Index is the server's File Search; nil when its backend has none
	// (the Gemini CLI backends, or a build without the API backend).
	Index Index
	// Limit bounds one index (or drop) in all: the call's own limit
	// (--timeout for chat, --expert-timeout for the expert tools), which
	// holds in a background job too, where the call's does not. 0 means
	// no bound beyond the call's and each upload's own.
	Limit time.Duration
}

// ErrLimit is wrapped by the error of an index stopped at Service.Limit
// or the call's deadline.
var ErrLimit = errors.New("file_search: the index reached the call's limit")

// Use is what file_search does for one call: planned in its Gather (Plan),
// done in its turn (Run).
type Use struct {
	mode    string
	root    string
	store   string
	scope   string
	report  Report
	dropped bool
	svc     *Service
}

// Check refuses a bad value of file_search before anything runs, and
// "on" on a server without File Search; "" is Off.
func (s *Service) Check(mode string) error {
	switch mode {
	case "", Off, Auto, Drop:
		return nil
	case On:
		if s == nil || s.Index == nil {
			return &toolerr.Error{Category: toolerr.Validation, Field: Field, Err: backend.ErrNoBuiltins,
				Msg: "file_search: this server's backend cannot do this: File Search stores are the Gemini API's, and this server runs the Gemini CLI. " +
					"The server's operator can run it with --backend api, or leave file_search out (or set it to auto)"}
		}
		return nil
	}
	return toolerr.ValidationError(Field, fmt.Sprintf("file_search must be one of %s, not %q", strings.Join(Modes, ", "), msg.Clip(mode, 100)))
}

// Overflowed says whether file context left files out because they did
// not fit: the token budget or the number of files of one request.
func Overflowed(f *filectx.Files) bool {
	if f == nil {
		return false
	}
	for _, n := range f.Skipped {
		for _, r := range []filectx.Reason{filectx.SkipBudget, filectx.SkipFileLimit} {
			if strings.HasPrefix(n.Reason, string(r)) || (strings.HasPrefix(n.Path, "(") && strings.Contains(n.Reason, " "+string(r)+" ")) {
				return true
			}
		}
	}
	return false
}

// Plan is what mode asks of a call whose tool reads root, decided at
// once and without the API: nil when the turn gets no store and there is
// nothing to report (Off, a server without File Search, Auto when the
// files sent did not overflow), else the Use whose Run does it.
func (s *Service) Plan(mode, root string, overflowed bool) *Use {
	if s == nil || s.Index == nil || mode == "" || mode == Off || (mode == Auto && !overflowed) {
		return nil
	}
	return &Use{mode: mode, root: root, svc: s}
}

// Prepare plans and runs what mode asks for a call whose file context
// was files (nil for none), at once: Plan, then Run.
func (s *Service) Prepare(ctx context.Context, mode, root string, files *filectx.Files) (*Use, error) {
	u := s.Plan(mode, root, Overflowed(files))
	if err := u.Run(ctx); err != nil {
		return nil, err
	}
	return u, nil
}

// Run does what u planned: indexes its root for the caller of ctx, or
// drops the caller's store of it, within the Service's Limit. Progress
// goes to the call's client, or its job, through the pipeline
// (conversation.GatherProgress); cancelling ctx stops the index, and the
// next call resumes it. A nil Use does nothing.
func (u *Use) Run(ctx context.Context) error {
	if u == nil {
		return nil
	}
	s := u.svc
	if s.Limit > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, s.Limit, ErrLimit)
		defer cancel()
	}
	// The caller is the scope: a store is never shared between callers.
	scope := identity.Of(ctx)
	if u.mode == Drop {
		if err := s.Index.Drop(ctx, u.root, scope); err != nil {
			return s.failure(ctx, "deleting your File Search store of the project root", err)
		}
		u.dropped = true
		return nil
	}
	conversation.GatherProgress(ctx, "indexing the project root for File Search")
	store, rep, err := s.Index.Index(ctx, u.root, scope, func(done, total int) {
		conversation.GatherProgress(ctx, fmt.Sprintf("indexing for File Search: %d of %d files", done, total))
	})
	if err != nil {
		return s.failure(ctx, "indexing the project root for File Search", err)
	}
	u.store, u.scope, u.report = store, scope, rep
	return nil
}

// failure is the tool's error of a File Search call on ctx that failed
// with err.
func (s *Service) failure(ctx context.Context, what string, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		limit := "this call's limit"
		if s.Limit > 0 {
			limit = fmt.Sprintf("this server's limit of %s per call", s.Limit)
		}
		return &toolerr.Error{Category: toolerr.ToolFailure, Err: fmt.Errorf("%w: %w", ErrLimit, err), Msg: fmt.Sprintf("file_search: %s took longer than %s, and was stopped: "+
			"what was uploaded is kept, and the next call with file_search carries on from there (or set file_search to off to answer without it)", what, limit)}
	}
	var te *toolerr.Error
	if errors.As(err, &te) {
		return err
	}
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &toolerr.Error{Category: toolerr.ToolFailure, Err: err, Msg: fmt.Sprintf("file_search: %s was stopped (%v); "+
			"what was uploaded is kept, and the next call uploads only the rest", what, err)}
	}
	return &toolerr.Error{Category: toolerr.ToolFailure, Err: err, Msg: fmt.Sprintf("file_search: %s failed: %v. "+
		"Call again (only what is missing is uploaded), or set file_search to off", what, err)}
}

// Indexes says whether the turn gets the store once Run has indexed it
// (the expert tools then tell Gemini so in its prompt).
func (u *Use) Indexes() bool { return u != nil && u.mode != Drop }

// Stores are the stores the turn gets, once Run has indexed: none for a
// nil Use.
func (u *Use) Stores() []string {
	if u == nil || u.store == "" {
		return nil
	}
	return []string{u.store}
}

// Render adds to res, the result of answer a, the files the answer drew
// on ("Files:" and a line per file with its lines, and a resource link
// each) and _meta.fileSearch: what the index did, and the citations.
func (u *Use) Render(res *mcp.CallToolResult, a *backend.Answer) {
	if u == nil || res == nil {
		return
	}
	meta := map[string]any{}
	if u.dropped {
		meta["dropped"] = true
	} else {
		meta["index"] = u.report
		var files []backend.FileSource
		if a != nil && a.Grounding != nil {
			// Only the call's store's chunks (or those naming none): the
			// API answers every caller on one key, and a chunk of another
			// store would name a file of another caller's project.
			for _, f := range a.Grounding.Files {
				if f.Store == "" || f.Store == u.store {
					files = append(files, f)
				}
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), citeLimit)
		text, links, cites := u.svc.Index.Cite(ctx, u.root, u.scope, files)
		cancel()
		if text != "" {
			res.Content = append(res.Content, &mcp.TextContent{Text: text})
		}
		for _, l := range links {
			res.Content = append(res.Content, l)
		}
		meta["citations"] = cites
	}
	if res.Meta == nil {
		res.Meta = mcp.Meta{}
	}
	res.Meta["fileSearch"] = meta
}

package attach

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/identity"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/toolerr"
)

// stubIndex records what it is asked.
type stubIndex struct {
	indexed, dropped []string // root|scope
	err              error
}

func (s *stubIndex) Index(_ context.Context, root, scope string, progress func(done, total int)) (string, Report, error) {
	s.indexed = append(s.indexed, root+"|"+scope)
	if s.err != nil {
		return "", Report{}, s.err
	}
	progress(0, 2)
	progress(2, 2)
	return "fileSearchStores/s-" + scope, Report{Files: 2, Uploaded: 2}, nil
}

func (s *stubIndex) Drop(_ context.Context, root, scope string) error {
	s.dropped = append(s.dropped, root+"|"+scope)
	return s.err
}

func (s *stubIndex) Cite(_ context.Context, _, _ string, files []backend.FileSource) (string, []*mcp.ResourceLink, any) {
	if len(files) == 0 {
		return "", nil, []string{}
	}
	return "Files:\n[1] " + files[0].Path, []*mcp.ResourceLink{{URI: "file:///r/" + files[0].Path, Name: files[0].Path}}, []string{files[0].Path}
}

func TestCheck(t *testing.T) {
	cli, api := &Service{}, &Service{Index: &stubIndex{}}
	for _, m := range []string{"", Off, Auto, Drop} {
		if err := cli.Check(m); err != nil {
			t.Errorf("CLI backend, %q: %v", m, err)
		}
	}
	err := cli.Check(On)
	var te *toolerr.Error
	if !errors.As(err, &te) || te.Field != Field || te.Category != toolerr.Validation || !errors.Is(err, backend.ErrNoBuiltins) ||
		!strings.Contains(err.Error(), "--backend api") {
		t.Errorf("on, CLI backend: %v", err)
	}
	if err := api.Check(On); err != nil {
		t.Errorf("on, API backend: %v", err)
	}
	if err := api.Check("always"); err == nil || !strings.Contains(err.Error(), "off, auto, on, drop") {
		t.Errorf("a bad value: %v", err)
	}
}

func TestOverflowed(t *testing.T) {
	cases := []struct {
		skipped []filectx.FileNote
		want    bool
	}{
		{nil, false},
		{[]filectx.FileNote{{Path: "a.bin", Reason: "binary"}, {Path: "b.go", Reason: "duplicate"}}, false},
		{[]filectx.FileNote{{Path: "b.go", Reason: "budget: 900 tokens over"}}, true},
		{[]filectx.FileNote{{Path: "c.go", Reason: "file-limit"}}, true},
		{[]filectx.FileNote{{Path: "(40 more)", Reason: "skipped and not listed; in all: budget 40, binary 2"}}, true},
		{[]filectx.FileNote{{Path: "(3 more)", Reason: "skipped and not listed; in all: binary 3"}}, false},
	}
	for _, c := range cases {
		if got := Overflowed(&filectx.Files{Skipped: c.skipped}); got != c.want {
			t.Errorf("Overflowed(%v) = %v, want %v", c.skipped, got, c.want)
		}
	}
}

func TestPrepare(t *testing.T) {
	ix := &stubIndex{}
	s := &Service{Index: ix}
	ctx := identity.With(context.Background(), "token:alice")
	fits := &filectx.Files{Processed: []filectx.FileNote{{Path: "a.go"}}}
	over := &filectx.Files{Skipped: []filectx.FileNote{{Path: "b.go", Reason: "budget"}}}

	for _, c := range []struct {
		mode  string
		files *filectx.Files
	}{{Off, over}, {"", over}, {Auto, fits}, {Auto, nil}} {
		if u, err := s.Prepare(ctx, c.mode, "/r", c.files); u != nil || err != nil {
			t.Errorf("%q: %+v %v; want nothing done", c.mode, u, err)
		}
	}
	if len(ix.indexed) != 0 {
		t.Fatalf("indexed %v", ix.indexed)
	}
	u, err := s.Prepare(ctx, Auto, "/r", over)
	if err != nil || len(u.Stores()) != 1 || u.Stores()[0] != "fileSearchStores/s-token:alice" || ix.indexed[0] != "/r|token:alice" {
		t.Fatalf("auto, overflowing: %+v %v, indexed %v; want the caller's store", u, err, ix.indexed)
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "answer"}}}
	u.Render(res, &backend.Answer{Grounding: &backend.Grounding{Files: []backend.FileSource{{Path: "b.go", Text: "x"}}}})
	meta, _ := res.Meta["fileSearch"].(map[string]any)
	if len(res.Content) != 3 || res.Content[1].(*mcp.TextContent).Text != "Files:\n[1] b.go" || meta["index"] != (Report{Files: 2, Uploaded: 2}) {
		t.Fatalf("rendered %+v, _meta %+v", res.Content, res.Meta)
	}

	// Another caller, another scope; stdio's is identity.Local.
	if _, err := s.Prepare(context.Background(), On, "/r", nil); err != nil || ix.indexed[1] != "/r|"+identity.Local {
		t.Fatalf("stdio: %v, indexed %v", err, ix.indexed)
	}

	u, err = s.Prepare(ctx, Drop, "/r", over)
	if err != nil || u.Stores() != nil || len(ix.dropped) != 1 || ix.dropped[0] != "/r|token:alice" {
		t.Fatalf("drop: %+v %v, dropped %v", u, err, ix.dropped)
	}
	res = &mcp.CallToolResult{}
	u.Render(res, &backend.Answer{})
	if m, _ := res.Meta["fileSearch"].(map[string]any); m["dropped"] != true {
		t.Fatalf("drop's _meta %+v", res.Meta)
	}

	// A failed index is the tool's failure; a stopped one says the next
	// call resumes it.
	ix.err = errors.New("Error 429, Message: Resource has been exhausted")
	_, err = s.Prepare(ctx, On, "/r", nil)
	var te *toolerr.Error
	if !errors.As(err, &te) || te.Category != toolerr.ToolFailure || !strings.Contains(err.Error(), "failed: Error 429") {
		t.Fatalf("a refused index: %v", err)
	}
	ix.err = context.Canceled
	if _, err = s.Prepare(ctx, On, "/r", nil); err == nil || !strings.Contains(err.Error(), "the next call uploads only the rest") {
		t.Fatalf("a stopped index: %v", err)
	}

	// Without an Index (the CLI backends) nothing is done, nor rendered.
	var none *Service
	if u, err := none.Prepare(ctx, On, "/r", over); u != nil || err != nil {
		t.Fatalf("no File Search: %+v %v", u, err)
	}
	var nu *Use
	nu.Render(res, nil)
	if nu.Stores() != nil {
		t.Fatal("a nil Use has stores")
	}
}

// hangingIndex is an Index whose upload never finishes: it waits for its
// ctx, as an upload whose API operation never ends does.
type hangingIndex struct{ stubIndex }

func (h *hangingIndex) Index(ctx context.Context, _, _ string, progress func(done, total int)) (string, Report, error) {
	progress(0, 3)
	<-ctx.Done()
	return "", Report{}, context.Cause(ctx)
}

// TestRunLimit: Plan decides without the API, Run indexes; an index that
// does not finish stops at the Service's Limit, with an error that says
// the next call carries it on, and wraps ErrLimit, as does one stopped by
// the call's own deadline.
func TestRunLimit(t *testing.T) {
	ix := &hangingIndex{}
	s := &Service{Index: ix, Limit: 50 * time.Millisecond}
	u := s.Plan(On, "/r", false)
	if !u.Indexes() || u.Stores() != nil {
		t.Fatalf("planned: %+v", u)
	}
	if s.Plan(Auto, "/r", false) != nil || !s.Plan(Auto, "/r", true).Indexes() || s.Plan(Drop, "/r", true).Indexes() {
		t.Fatal("Plan of auto or drop")
	}
	err := u.Run(context.Background())
	var te *toolerr.Error
	if !errors.As(err, &te) || te.Category != toolerr.ToolFailure || !errors.Is(err, ErrLimit) ||
		!strings.Contains(err.Error(), "file_search: indexing the project root for File Search took longer than this server's limit of 50ms per call") ||
		!strings.Contains(err.Error(), "the next call with file_search carries on from there") {
		t.Fatalf("an index past the limit: %v", err)
	}
	// The call's deadline, without a Limit of the Service's own.
	s.Limit = 0
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := s.Plan(On, "/r", false).Run(ctx); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "took longer than this call's limit") {
		t.Fatalf("an index past the call's deadline: %v", err)
	}
	// A cancel, with a cause of its own (a job's), is not the limit.
	cctx, ccancel := context.WithCancelCause(context.Background())
	ccancel(errors.New("the job was cancelled"))
	if err := s.Plan(On, "/r", false).Run(cctx); errors.Is(err, ErrLimit) ||
		!strings.Contains(err.Error(), "was stopped (the job was cancelled); what was uploaded is kept, and the next call uploads only the rest") {
		t.Fatalf("a cancelled index: %v", err)
	}
}

// The API answers on the server's one key for every caller: a chunk it
// says comes from a store other than the call's (another caller's, of a
// misrouted answer) is not cited, so that no path of another caller's
// project reaches this one's text or _meta.
func TestRenderCitesOnlyTheCallsStore(t *testing.T) {
	s := &Service{Index: &stubIndex{}}
	ctx := identity.With(context.Background(), "token:alice")
	u, err := s.Prepare(ctx, On, "/r", nil)
	if err != nil {
		t.Fatal(err)
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "answer"}}}
	u.Render(res, &backend.Answer{Grounding: &backend.Grounding{Files: []backend.FileSource{
		{Store: "fileSearchStores/s-token:bob", Path: "bob/secret-plan.go", Text: "x"},
		{Store: "fileSearchStores/s-token:alice", Path: "a.go", Text: "y"},
	}}})
	meta, _ := res.Meta["fileSearch"].(map[string]any)
	if len(res.Content) != 3 || res.Content[1].(*mcp.TextContent).Text != "Files:\n[1] a.go" {
		t.Fatalf("rendered %+v, _meta %+v; want a.go alone cited", res.Content, meta)
	}
	// A chunk that names no store (the field is optional) is the call's.
	res = &mcp.CallToolResult{}
	u.Render(res, &backend.Answer{Grounding: &backend.Grounding{Files: []backend.FileSource{{Path: "b.go", Text: "z"}}}})
	if len(res.Content) != 2 || res.Content[0].(*mcp.TextContent).Text != "Files:\n[1] b.go" {
		t.Fatalf("a chunk naming no store: %+v", res.Content)
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// The tests here run the server with the API backend on the fake Gemini
// API for file_search: a project root indexed in a File Search store of
// the caller's, used when its files do not fit (--max-files 5 here), and
// the answer's files cited.

// fsFiles is the number of files of the test's project root.
const fsFiles = 24

// fsRoot writes a project root of fsFiles Go files, each with a marker
// line a prompt's [[cite:…]] finds, and returns it.
func fsRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i := range fsFiles {
		fsWrite(t, root, i, "")
	}
	return root
}

// fsWrite writes file i of the project root, with extra at its end.
func fsWrite(t *testing.T, root string, i int, extra string) {
	t.Helper()
	p := filepath.Join(root, "pkg", fmt.Sprintf("file%02d.go", i))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf("package pkg\n\n// F%02d is marker-%02d.\nfunc F%02d() int { return %d }\n%s", i, i, i, i, extra)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fsIndex is _meta.fileSearch.index.
type fsIndex struct {
	FilesIndexed, Uploaded, Unchanged, Deleted, Skipped int
	Recreated                                           bool
}

// fsMeta is _meta.fileSearch.
type fsMeta struct {
	Index     *fsIndex
	Dropped   bool
	Citations []struct {
		Path               string
		StartLine, EndLine int
		URI                string
	}
}

// fsArgs are analyze's arguments on the whole project root, its prompt
// citing marker.
func fsArgs(mode, marker string) map[string]any {
	return map[string]any{"files": []any{"."}, "question": "what does it do? [[cite:" + marker + "]]", "file_search": mode}
}

// fsCall calls analyze and returns its result and _meta.fileSearch.
func fsCall(t *testing.T, cs *mcp.ClientSession, args map[string]any) (*mcp.CallToolResult, fsMeta) {
	t.Helper()
	res, err := callExpert(t, cs, "analyze", args)
	if err != nil || res.IsError {
		t.Fatalf("analyze %v: %v %s", args, err, resultText(res))
	}
	var m fsMeta
	if res.Meta["fileSearch"] != nil {
		metaOf(t, res, "fileSearch", &m)
	}
	return res, m
}

// fsServer starts the server on stdio with file_search's project root
// and the progress handler onProgress (nil for none).
func fsServer(t *testing.T, h *hostEnv, root string, onProgress func(*mcp.ProgressNotificationClientRequest), args ...string) *mcp.ClientSession {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if onProgress != nil {
		opts.ProgressNotificationHandler = func(_ context.Context, r *mcp.ProgressNotificationClientRequest) { onProgress(r) }
	}
	cmd := h.command(append([]string{"--project-root", root, "--max-files", "5"}, args...)...)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "fs-test", Version: "1"}, opts).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// storeOf is the one store the turn of the fake API's last answer named.
func storeOf(t *testing.T, api *fakeapi.Server) string {
	t.Helper()
	stores := lastTurn(t, api).FileSearchStores()
	if len(stores) != 1 {
		t.Fatalf("the turn named the stores %q, want one", stores)
	}
	return stores[0]
}

func TestFileSearchAutoIndexesAndCites(t *testing.T) {
	h := newHostEnv(t, map[string]any{})
	root := fsRoot(t)
	// The client's SDK hands notifications to the handler apart from the
	// responses: the test waits for one of the index rather than look
	// when the call has returned.
	var mu sync.Mutex
	var progress []string
	indexing := make(chan struct{})
	var once sync.Once
	cs := fsServer(t, h, root, func(r *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		progress = append(progress, r.Params.Message)
		mu.Unlock()
		if strings.HasPrefix(r.Params.Message, "indexing for File Search: ") {
			once.Do(func() { close(indexing) })
		}
	})

	// Files that fit: auto leaves File Search alone.
	res, m := fsCall(t, cs, map[string]any{"files": []any{"pkg/file01.go"}, "question": "q", "file_search": "auto"})
	if res.Meta["fileSearch"] != nil || len(h.api.Stores()) != 0 || lastTurn(t, h.api).FileSearchStores() != nil {
		t.Fatalf("auto on files that fit made a store: %+v, stores %v", m, h.api.Stores())
	}
	if strings.Contains(string(lastTurn(t, h.api).Body), "## Project search") {
		t.Error("a prompt without a store speaks of File Search")
	}

	// The whole root does not fit in 5 files: it is indexed, and the
	// answer cites the file the fake's chunk came from.
	params := &mcp.CallToolParams{Name: "analyze", Arguments: fsArgs("auto", "marker-17.")}
	params.SetProgressToken("fs-1")
	res, err := cs.CallTool(guardCtx(t), params)
	if err != nil || res.IsError {
		t.Fatalf("analyze: %v %s", err, resultText(res))
	}
	metaOf(t, res, "fileSearch", &m)
	if m.Index == nil || m.Index.Uploaded != fsFiles || m.Index.FilesIndexed != fsFiles {
		t.Fatalf("_meta.fileSearch %+v, want %d files uploaded", m, fsFiles)
	}
	store := storeOf(t, h.api)
	if !strings.Contains(string(lastTurn(t, h.api).Body), "## Project search") {
		t.Error("the prompt does not tell Gemini that the project is in its File Search tool")
	}
	if docs := h.api.Documents(store); len(docs) != fsFiles {
		t.Fatalf("the store holds %d documents, want %d", len(docs), fsFiles)
	}
	var text string
	var links []*mcp.ResourceLink
	for _, c := range res.Content {
		switch c := c.(type) {
		case *mcp.TextContent:
			text += c.Text + "\n"
		case *mcp.ResourceLink:
			links = append(links, c)
		}
	}
	if !strings.Contains(text, "Files:\n[1] pkg/file17.go:3-") {
		t.Errorf("the result does not cite pkg/file17.go from line 3:\n%s", text)
	}
	want := "file://" + filepath.ToSlash(filepath.Join(root, "pkg", "file17.go"))
	if len(links) != 1 || links[0].URI != want || len(m.Citations) != 1 || m.Citations[0].Path != "pkg/file17.go" || m.Citations[0].StartLine != 3 {
		t.Errorf("links %+v, citations %+v; want one, %s from line 3", links, m.Citations, want)
	}
	select {
	case <-indexing:
	case <-guardCtx(t).Done():
		mu.Lock()
		t.Errorf("no progress of the index: %q", progress)
		mu.Unlock()
	}

	// Two files changed: two uploaded, the rest unchanged, same store.
	fsWrite(t, root, 3, "// changed\n")
	fsWrite(t, root, 9, "// changed\n")
	_, m = fsCall(t, cs, fsArgs("on", "marker-03."))
	if m.Index == nil || m.Index.Uploaded != 2 || m.Index.Unchanged != fsFiles-2 || storeOf(t, h.api) != store {
		t.Fatalf("after changing 2 files: %+v, store %s (was %s); want 2 uploaded into the same store", m.Index, storeOf(t, h.api), store)
	}

	// The store deleted behind the server's back is made again.
	h.api.DropStore(store)
	_, m = fsCall(t, cs, fsArgs("on", "marker-05."))
	if m.Index == nil || !m.Index.Recreated || m.Index.Uploaded != fsFiles || storeOf(t, h.api) == store {
		t.Fatalf("after the store was deleted: %+v; want it made again with every file", m.Index)
	}

	// chat, without files, gets the same store and cites as analyze.
	res, err = callTool(cs, "chat", map[string]any{"prompt": "where is F05? [[cite:marker-05.]]", "file_search": "on"})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %s", err, resultText(res))
	}
	metaOf(t, res, "fileSearch", &m)
	text = ""
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text + "\n"
		}
	}
	if m.Index == nil || m.Index.Uploaded != 0 || m.Index.Unchanged != fsFiles || storeOf(t, h.api) != h.api.Stores()[0].Name ||
		!strings.Contains(text, "Files:\n[1] pkg/file05.go:3-") {
		t.Fatalf("chat with file_search on: %+v\n%s", m.Index, text)
	}

	// Dropped on request: the store is deleted, the turn gets none.
	_, m = fsCall(t, cs, fsArgs("drop", "marker-05."))
	if !m.Dropped || len(h.api.Stores()) != 0 || lastTurn(t, h.api).FileSearchStores() != nil {
		t.Fatalf("drop: %+v, stores %v", m, h.api.Stores())
	}
}

func TestFileSearchStoresPerCaller(t *testing.T) {
	h := newHostEnv(t, map[string]any{})
	root := fsRoot(t)
	h.vars = append(h.vars, "GEMINI_MCP_TOKENS="+tokenOne+","+tokenTwo)
	addr := h.serve(t, "--project-root", root, "--max-files", "5", "--allowed-roots", root+","+h.dir)
	a, b := httpClient(t, addr, tokenOne), httpClient(t, addr, tokenTwo)
	_, ma := fsCall(t, a, fsArgs("on", "marker-01."))
	storeA := storeOf(t, h.api)
	_, mb := fsCall(t, b, fsArgs("on", "marker-01."))
	storeB := storeOf(t, h.api)
	if storeA == storeB || ma.Index.Uploaded != fsFiles || mb.Index.Uploaded != fsFiles || len(h.api.Stores()) != 2 {
		t.Fatalf("token one's store %s (%+v), token two's %s (%+v), %d stores; want one each", storeA, ma.Index, storeB, mb.Index, len(h.api.Stores()))
	}
	// Token two's drop deletes its own store, not token one's.
	fsCall(t, b, fsArgs("drop", "x"))
	if s := h.api.Stores(); len(s) != 1 || s[0].Name != storeA {
		t.Fatalf("after token two's drop the stores are %+v, want token one's %s", s, storeA)
	}
	_, ma = fsCall(t, a, fsArgs("on", "marker-02."))
	if storeOf(t, h.api) != storeA || ma.Index.Uploaded != 0 {
		t.Fatalf("token one's store after token two's drop: %s %+v", storeOf(t, h.api), ma.Index)
	}
}

func TestFileSearchInterruptedIndexResumes(t *testing.T) {
	h := newHostEnv(t, map[string]any{})
	root := fsRoot(t)
	// Each upload waits for one poll of its operation, so the index
	// takes long enough to be cut.
	h.api.SetPendingPolls(1)
	ctx, cancel := context.WithCancel(guardCtx(t))
	defer cancel()
	cs := fsServer(t, h, root, func(r *mcp.ProgressNotificationClientRequest) {
		var done, total int
		if _, err := fmt.Sscanf(r.Params.Message, "indexing for File Search: %d of %d files", &done, &total); err == nil && done >= 4 {
			cancel()
		}
	})
	params := &mcp.CallToolParams{Name: "analyze", Arguments: fsArgs("on", "marker-01.")}
	params.SetProgressToken("cut")
	if _, err := cs.CallTool(ctx, params); err == nil {
		t.Fatal("the cancelled call answered")
	}
	// The next call finds the first part indexed and uploads the rest.
	h.stderr.wait(t, 1, "expert tool failed", "tool=analyze")
	uploadedBefore, _ := h.api.StoreCounts()
	_, m := fsCall(t, cs, fsArgs("on", "marker-01."))
	if m.Index == nil || m.Index.Unchanged < 4 || m.Index.Uploaded+m.Index.Unchanged != fsFiles {
		t.Fatalf("the resumed index: %+v (uploads before it: %d); want the files done kept and the rest uploaded", m.Index, uploadedBefore)
	}
	if docs := h.api.Documents(storeOf(t, h.api)); len(docs) != fsFiles {
		t.Fatalf("the store holds %d documents, want %d", len(docs), fsFiles)
	}
}

func TestFileSearchFailures(t *testing.T) {
	h := newHostEnv(t, map[string]any{})
	root := fsRoot(t)
	// Each upload waits half a second for its operation's first poll:
	// the limit leaves time for an index of the root's files.
	cs := fsServer(t, h, root, nil, "--expert-timeout", "8s")

	// The API refuses the uploads (quota): a clear tool failure.
	h.api.RefuseStoreUploads(1 << 20)
	_, err := callExpert(t, cs, "analyze", fsArgs("on", "x"))
	var we *jsonrpc.Error
	if !errors.As(err, &we) || !strings.Contains(we.Message, "file_search: indexing the project root for File Search failed") ||
		!strings.Contains(we.Message, "429") {
		t.Fatalf("uploads refused: %v", err)
	}
	h.api.RefuseStoreUploads(0)

	// An operation that never finishes: the call stops at its limit,
	// saying that the next call carries the index on.
	h.api.SetPendingPolls(1 << 30)
	_, err = callExpert(t, cs, "analyze", fsArgs("on", "x"))
	if !errors.As(err, &we) || !strings.Contains(we.Message, "file_search: indexing the project root for File Search took longer than this server's limit of 8s") ||
		!strings.Contains(we.Message, "the next call with file_search carries on from there") {
		t.Fatalf("an operation that never finished: %v", err)
	}
	h.api.SetPendingPolls(0)
	_, m := fsCall(t, cs, fsArgs("on", "marker-01."))
	if m.Index == nil || m.Index.FilesIndexed != fsFiles {
		t.Fatalf("after the failures: %+v", m.Index)
	}
}

func TestFileSearchOnCLIBackend(t *testing.T) {
	e := newEnv(t)
	cs := connect(t, e.command())
	callErr(t, cs, "chat", map[string]any{"prompt": "x", "file_search": "on"}, "file_search: this server's backend cannot do this", "--backend api")
	_, err := callTool(cs, "analyze", map[string]any{"files": []any{"."}, "question": "q", "file_search": "on"})
	if we := wireError(t, err); we.Code != jsonrpc.CodeInvalidParams || !strings.Contains(we.Message, "file_search: this server's backend cannot do this") ||
		!strings.Contains(string(we.Data), `"field":"file_search"`) {
		t.Errorf("analyze with file_search on on the CLI backend: %v", err)
	}
	// auto does nothing there.
	res, err := callTool(cs, "chat", map[string]any{"prompt": "x", "file_search": "auto"})
	if err != nil || res.IsError || res.Meta["fileSearch"] != nil {
		t.Errorf("chat with file_search auto on the CLI backend: %v %s", err, resultText(res))
	}
}

package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tests here run file_search on chat-reply and precommit, an index
// that is a background call's job (or a call's handed over past
// --job-after), and chat's index bound by the call's limit (--timeout),
// on the fake Gemini API.

// fsText is the text of every text item of res.
func fsText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text + "\n")
		}
	}
	return b.String()
}

// TestFileSearchChatReplyAndPrecommit: chat-reply continues a chat with
// the caller's store of the project root, citing from it; precommit with
// file_search on gets the same store, and its prompt says the code
// around the changes is there; auto on a small change does not index.
func TestFileSearchChatReplyAndPrecommit(t *testing.T) {
	h := newHostEnv(t, map[string]any{})
	root := fsRoot(t)
	cs := fsServer(t, h, root, nil)

	res := callOK(t, cs, "chat", map[string]any{"prompt": "hello"})
	session, _ := res.Meta["sessionId"].(string)
	if session == "" || lastTurn(t, h.api).FileSearchStores() != nil {
		t.Fatalf("chat without file_search: %s %+v", resultText(res), res.Meta)
	}
	res = callOK(t, cs, "chat-reply", map[string]any{"sessionId": session, "prompt": "where is F07? [[cite:marker-07.]]", "file_search": "on"})
	var m fsMeta
	metaOf(t, res, "fileSearch", &m)
	store := storeOf(t, h.api)
	if m.Index == nil || m.Index.Uploaded != fsFiles || res.Meta["sessionId"] != session ||
		!strings.Contains(fsText(res), "Files:\n[1] pkg/file07.go:3-") {
		t.Fatalf("chat-reply with file_search on: %+v %+v\n%s", m.Index, res.Meta, fsText(res))
	}
	// Auto without files: nothing overflowed, no store, as for chat.
	res = callOK(t, cs, "chat-reply", map[string]any{"sessionId": session, "prompt": "and F08?", "file_search": "auto"})
	if res.Meta["fileSearch"] != nil || lastTurn(t, h.api).FileSearchStores() != nil {
		t.Fatalf("chat-reply with file_search auto: %+v", res.Meta)
	}
	callErr(t, cs, "chat-reply", map[string]any{"sessionId": session, "prompt": "x", "file_search": "always"}, "file_search must be one of off, auto, on, drop")

	// precommit: the root is a repository with one file changed.
	git(t, root, "init", "-q")
	git(t, root, "add", ".")
	git(t, root, "commit", "-q", "-m", "start")
	fsWrite(t, root, 4, "// changed\n")
	res, err := callExpert(t, cs, "precommit", map[string]any{"path": ".", "file_search": "auto", "original_request": "a small change"})
	if err != nil || res.Meta["fileSearch"] != nil || lastTurn(t, h.api).FileSearchStores() != nil {
		t.Fatalf("precommit with auto on a change that fits: %v %+v", err, res)
	}
	res, err = callExpert(t, cs, "precommit", map[string]any{"path": ".", "file_search": "on", "original_request": "what calls F04? [[cite:marker-05.]]"})
	if err != nil {
		t.Fatalf("precommit with file_search on: %v", err)
	}
	metaOf(t, res, "fileSearch", &m)
	body := string(lastTurn(t, h.api).Body)
	if m.Index == nil || m.Index.Uploaded != 1 || m.Index.FilesIndexed != fsFiles || storeOf(t, h.api) != store ||
		!strings.Contains(body, "## Project search") || !strings.Contains(body, "with the changes above") ||
		!strings.Contains(fsText(res), "pkg/file05.go:3-") || res.StructuredContent == nil {
		t.Fatalf("precommit with file_search on: %+v, store %s (chat-reply's %s)\n%s", m.Index, storeOf(t, h.api), store, fsText(res))
	}
}

// fsJobMessage asks the job tool, until job id reports a message
// starting with prefix, and returns its result. The job tool's wait ends
// at a change of status, not of message: each call waits half a second
// for one.
func fsJobMessage(t *testing.T, cs *mcp.ClientSession, id, prefix string) *mcp.CallToolResult {
	t.Helper()
	for range 240 { // a failure guard only
		res := callOK(t, cs, "job", map[string]any{"jobId": id, "wait": 0.5})
		if msg, _ := res.Meta["message"].(string); strings.HasPrefix(msg, prefix) {
			return res
		}
		if s, _ := res.Meta["jobStatus"].(string); s != "working" && s != "queued" {
			t.Fatalf("job %s ended before reporting %q: %s", id, prefix, resultText(res))
		}
	}
	t.Fatalf("job %s never reported %q", id, prefix)
	return nil
}

// fsCancelJob cancels job id and checks that it ends cancelled, its index
// stopped, and that Gemini was never asked the prompt with marker.
func fsCancelJob(t *testing.T, h *hostEnv, cs *mcp.ClientSession, id, marker string) {
	t.Helper()
	res, err := jobEnd(t, cs, id, map[string]any{"cancel": true})
	if err != nil || res.Meta["jobStatus"] != "cancelled" {
		t.Fatalf("the cancelled job: %v %s %+v", err, resultText(res), res.Meta)
	}
	for _, r := range h.api.Requests() {
		if strings.Contains(string(r.Body), marker) {
			t.Fatalf("Gemini was asked %q though its index was cancelled", marker)
		}
	}
}

// TestFileSearchIndexIsTheJobs: with background: true, a call whose
// index cannot finish (its uploads' operations never end) answers at once
// with its job; the job reports the index's progress, and its cancel
// stops the index before Gemini runs. A call past --job-after whose
// index holds it goes on as a job the same way. A bad argument still
// fails the call at once, with no job.
func TestFileSearchIndexIsTheJobs(t *testing.T) {
	h := newHostEnv(t, map[string]any{})
	root := fsRoot(t)
	h.api.SetPendingPolls(1 << 30)
	// Progress reaches the job at every change and every 200ms.
	cs := fsServer(t, h, root, nil, "--job-after", "1s", "--progress-interval", "200ms")

	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"chat", map[string]any{"prompt": "chat indexed in a job", "file_search": "on", "background": true}},
		{"analyze", map[string]any{"files": []any{"."}, "question": "analyze indexed in a job", "file_search": "auto", "background": true}},
		// No background: handed over past --job-after.
		{"chat", map[string]any{"prompt": "chat handed over while indexing", "file_search": "on"}},
	} {
		res := callOK(t, cs, c.tool, c.args)
		id, _ := res.Meta["jobId"].(string)
		if id == "" {
			t.Fatalf("%s %v did not answer with a job: %s", c.tool, c.args, resultText(res))
		}
		if c.args["background"] == nil && !strings.Contains(resultText(res), "ran past this server's limit of 1s") {
			t.Errorf("the call past --job-after: %s", resultText(res))
		}
		fsJobMessage(t, cs, id, "indexing for File Search: 0 of ")
		marker, _ := c.args["prompt"].(string)
		if marker == "" {
			marker, _ = c.args["question"].(string)
		}
		fsCancelJob(t, h, cs, id, marker)
	}

	// Argument and path errors come back at once.
	callErr(t, cs, "chat", map[string]any{"prompt": "x", "files": []any{"../outside"}, "file_search": "on", "background": true}, "outside")
	_, err := callExpert(t, cs, "analyze", map[string]any{"files": []any{"/etc"}, "question": "q", "file_search": "on", "background": true})
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Fatalf("analyze of a path outside the root, in the background: %v", err)
	}

	// Once the API indexes again, the next call finishes the index (as a
	// job, should it run past --job-after).
	h.api.SetPendingPolls(0)
	res := callOK(t, cs, "chat", map[string]any{"prompt": "where is F02? [[cite:marker-02.]]", "file_search": "on"})
	if id, _ := res.Meta["jobId"].(string); id != "" {
		if res, err = jobEnd(t, cs, id, nil); err != nil || res.IsError {
			t.Fatalf("the job of the index after the cancelled ones: %v %s", err, resultText(res))
		}
	}
	var m fsMeta
	metaOf(t, res, "fileSearch", &m)
	if m.Index == nil || m.Index.FilesIndexed != fsFiles || !strings.Contains(fsText(res), "pkg/file02.go:3-") {
		t.Fatalf("the index after the cancelled ones: %+v\n%s", m.Index, fsText(res))
	}
}

// TestFileSearchChatIndexLimit: chat's index is bound by the call's own
// limit (--timeout): an upload whose operation never finishes stops it
// there, with an error that says the next call carries it on, which it
// does.
func TestFileSearchChatIndexLimit(t *testing.T) {
	h := newHostEnv(t, map[string]any{})
	root := fsRoot(t)
	h.api.SetPendingPolls(1 << 30)
	cs := fsServer(t, h, root, nil, "--timeout", "4s")
	ctx, cancel := context.WithCancel(guardCtx(t))
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "never indexed", "file_search": "on"}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "file_search: indexing the project root for File Search took longer than this server's limit of 4s per call") ||
		!strings.Contains(resultText(res), "the next call with file_search carries on from there") {
		t.Fatalf("chat whose index never finished: %v %s", err, resultText(res))
	}
	h.api.SetPendingPolls(0)
	res = callOK(t, cs, "chat", map[string]any{"prompt": "where is F09? [[cite:marker-09.]]", "file_search": "on"})
	var m fsMeta
	metaOf(t, res, "fileSearch", &m)
	if m.Index == nil || m.Index.FilesIndexed != fsFiles {
		t.Fatalf("the next call's index: %+v", m.Index)
	}
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
)

// apiEnv is newEnv for the API backend, talking to a fake Gemini API.
func apiEnv(t testing.TB) (*env, *fakeapi.Server) {
	t.Helper()
	e := newEnv(t)
	fake := fakeapi.New()
	t.Cleanup(fake.Close)
	e.vars = append(e.vars, "GEMINI_API_KEY=k", "GOOGLE_GEMINI_BASE_URL="+fake.URL())
	return e, fake
}

// httpClient connects a go-sdk client to the server at addr, with token as
// its bearer token when it is not "".
func httpClient(t testing.TB, addr, token string) *mcp.ClientSession {
	t.Helper()
	hc := http.DefaultClient
	if token != "" {
		hc = &http.Client{Transport: authTransport(token)}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bin-replicas", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callOK calls tool and fails the test unless it answers without error.
func callOK(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := callTool(cs, tool, args)
	if err != nil || res.IsError {
		t.Fatalf("%s %v: %v %s", tool, args, err, resultText(res))
	}
	return res
}

func callTool(cs *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
}

func resultText(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return fmt.Sprintf("%+v", res)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return fmt.Sprintf("%+v", res.Content[0])
}

// answerOf is a result's answer without the server's notes.
func answerOf(res *mcp.CallToolResult) string {
	text, _, _ := strings.Cut(resultText(res), "\n\n[gemini-mcp-server:")
	return text
}

// streams returns the turns the fake API has answered, oldest first.
func streams(fake *fakeapi.Server) []fakeapi.Request {
	var out []fakeapi.Request
	for _, r := range fake.Requests() {
		if r.Method == fakeapi.MethodStream {
			out = append(out, r)
		}
	}
	return out
}

// lastStream returns the last turn the fake API answered whose prompt
// contains marker.
func lastStream(t *testing.T, fake *fakeapi.Server, marker string) fakeapi.Request {
	t.Helper()
	rs := streams(fake)
	for i := len(rs) - 1; i >= 0; i-- {
		if strings.Contains(rs[i].LastUserText, marker) {
			return rs[i]
		}
	}
	t.Fatalf("the fake API got no turn with %q", marker)
	return fakeapi.Request{}
}

// carries fails t unless the API request r sent every one of texts (the
// earlier prompts and answers of its conversation) in its history.
func carries(t *testing.T, r fakeapi.Request, texts ...string) {
	t.Helper()
	for _, s := range texts {
		enc, _ := json.Marshal(s)
		if !strings.Contains(string(r.Body), strings.Trim(string(enc), `"`)) {
			t.Errorf("the request for %q does not carry %q in its history", r.LastUserText, s)
		}
	}
}

// waitArrived waits until the fake API has received a turn whose prompt
// contains marker, and returns it.
func waitArrived(t *testing.T, fake *fakeapi.Server, marker string) fakeapi.Request {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a failure guard only
	defer cancel()
	r, err := fake.WaitStream(ctx, marker)
	if err != nil {
		t.Fatalf("the fake API never received %q: %v", marker, err)
	}
	return r
}

// sessionIDs lists the ids the sessions tool returns.
func sessionIDs(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res := callOK(t, cs, "sessions", map[string]any{})
	raw, _ := json.Marshal(res.StructuredContent)
	var out struct{ Sessions []struct{ ID string } }
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range out.Sessions {
		ids = append(ids, s.ID)
	}
	return ids
}

// TestReplicasOnRedis runs two stateless HTTP replicas of the API backend
// on one real redis-server and one fake Gemini API: what one starts, the
// other continues, pages and lists; two replies to one session, one
// through each replica, run one after the other; and a session of one
// token is unknown to another token on the other replica.
func TestReplicasOnRedis(t *testing.T) {
	t.Parallel()
	replicasOn(t, redistest.Start(t).URL(0))
}

// TestReplicasOnRedisCluster is TestReplicasOnRedis on a 3-master Redis
// Cluster.
func TestReplicasOnRedisCluster(t *testing.T) {
	t.Parallel()
	replicasOn(t, redistest.StartCluster(t, 3).URL())
}

// TestReplicasOnSentinel is TestReplicasOnRedis on the master that a
// sentinel names.
func TestReplicasOnSentinel(t *testing.T) {
	t.Parallel()
	replicasOn(t, redistest.StartSentinel(t, 1, 1).URL(0))
}

func replicasOn(t *testing.T, store string) {
	e, fake := apiEnv(t)
	e.vars = append(e.vars, "GEMINI_MCP_TOKENS="+tokenOne+","+tokenTwo)
	args := []string{"--stateless", "--backend", "api", "--store", store, "--max-answer-bytes", "1000"}
	addrA, _ := startHTTP(t, e, args...)
	addrB, _ := startHTTP(t, e, args...)
	a, b := httpClient(t, addrA, tokenOne), httpClient(t, addrB, tokenOne)

	// chat on A, chat-reply on B: B's request to Gemini holds A's turn.
	first := callOK(t, a, "chat", map[string]any{"prompt": "first turn, on A"})
	id, _ := first.Meta["sessionId"].(string)
	if id == "" {
		t.Fatalf("chat on A: no sessionId in %+v", first.Meta)
	}
	reply := callOK(t, b, "chat-reply", map[string]any{"prompt": "second turn, on B", "sessionId": id})
	if reply.Meta["sessionId"] != id {
		t.Fatalf("chat-reply on B: session %v, want %s", reply.Meta["sessionId"], id)
	}
	r := lastStream(t, fake, "second turn, on B")
	if r.NumContents != 3 {
		t.Errorf("B's request has %d contents, want 3 (A's turn, its answer, B's turn)", r.NumContents)
	}
	carries(t, r, "first turn, on A", answerOf(first))

	// A long answer paged on A: B serves its pages.
	long := callOK(t, a, "chat-reply", map[string]any{"prompt": "[[bytes:3500]] a long answer, on A", "sessionId": id})
	answerID, _ := long.Meta["answerId"].(string)
	pages, _ := long.Meta["pages"].(float64)
	if answerID == "" || pages < 3 {
		t.Fatalf("a 3,500-byte answer at --max-answer-bytes 1000 was not paged: %+v", long.Meta)
	}
	whole := answerOf(long)
	for p := 2; p <= int(pages); p++ {
		whole += answerOf(callOK(t, b, "chat-page", map[string]any{"answerId": answerID, "page": p}))
	}
	if want := lastStream(t, fake, "a long answer, on A").Answer; whole != want {
		t.Errorf("A's first page and B's pages make %d bytes, want the %d of the answer", len(whole), len(want))
	}

	// B lists the session A started.
	if ids := sessionIDs(t, b); len(ids) != 1 || ids[0] != id {
		t.Errorf("sessions on B: %q, want [%s]", ids, id)
	}

	// Two replies at once, through A and through B: the second waits for
	// the first, and continues after it.
	slow := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := callTool(a, "chat-reply", map[string]any{"prompt": "[[sleep:1500]] slow turn, on A", "sessionId": id})
		slow <- res
	}()
	slowReq := waitArrived(t, fake, "slow turn, on A")
	fast := callOK(t, b, "chat-reply", map[string]any{"prompt": "fast turn, on B", "sessionId": id})
	slowRes := <-slow
	if slowRes == nil || slowRes.IsError {
		t.Fatalf("the slow reply on A: %s", resultText(slowRes))
	}
	fastReq := lastStream(t, fake, "fast turn, on B")
	carries(t, fastReq, "slow turn, on A", answerOf(slowRes))
	if fastReq.NumContents != slowReq.NumContents+2 {
		t.Errorf("B's request has %d contents, want %d: A's turn and answer before it", fastReq.NumContents, slowReq.NumContents+2)
	}
	if fastReq.Time.Before(slowReq.Time.Add(1500 * time.Millisecond)) {
		t.Errorf("B's request arrived %v after A's, before A's 1.5 s answer ended", fastReq.Time.Sub(slowReq.Time))
	}
	if !strings.Contains(answerOf(fast), "last=fast turn, on B") {
		t.Errorf("B's answer: %q", answerOf(fast))
	}

	// Another token, on the other replica, knows nothing of the session.
	other := httpClient(t, addrB, tokenTwo)
	res, err := callTool(other, "chat-reply", map[string]any{"prompt": "not mine", "sessionId": id})
	if err != nil || !res.IsError {
		t.Errorf("token two continued token one's session: %v %s", err, resultText(res))
	}
	if ids := sessionIDs(t, other); len(ids) != 0 {
		t.Errorf("sessions of token two: %q, want none", ids)
	}
	if s := streams(fake); strings.Contains(s[len(s)-1].LastUserText, "not mine") {
		t.Error("the refused reply reached Gemini")
	}
}

// TestRateLimitsAcrossReplicas: with --rate-limits and a Redis store, the
// replicas count a client's calls together: the second call, made on the
// other replica, is refused with the delay and reaches no one.
func TestRateLimitsAcrossReplicas(t *testing.T) {
	t.Parallel()
	rateLimitsOn(t, redistest.Start(t).URL(0))
}

// TestRateLimitsAcrossReplicasOnCluster is TestRateLimitsAcrossReplicas
// on a 3-master Redis Cluster.
func TestRateLimitsAcrossReplicasOnCluster(t *testing.T) {
	t.Parallel()
	rateLimitsOn(t, redistest.StartCluster(t, 3).URL())
}

func rateLimitsOn(t *testing.T, store string) {
	e, fake := apiEnv(t)
	e.vars = append(e.vars, "GEMINI_MCP_TOKENS="+tokenOne+","+tokenTwo)
	args := []string{"--stateless", "--backend", "api", "--store", store, "--rate-limits", "chat=1/min"}
	addrA, _ := startHTTP(t, e, args...)
	addrB, _ := startHTTP(t, e, args...)
	callOK(t, httpClient(t, addrA, tokenOne), "chat", map[string]any{"prompt": "one call a minute, on A"})
	res, err := callTool(httpClient(t, addrB, tokenOne), "chat", map[string]any{"prompt": "a second call, on B"})
	if err != nil {
		t.Fatal(err)
	}
	if secs, _ := res.Meta["retryAfterSeconds"].(float64); !res.IsError || secs < 1 || secs > 60 ||
		!strings.Contains(answerOf(res), "reached the rate limit of chat (1/min)") {
		t.Fatalf("the second call, on B: %+v %s", res.Meta, answerOf(res))
	}
	for _, r := range fake.Requests() {
		if strings.Contains(r.LastUserText, "a second call, on B") {
			t.Fatal("the refused call reached Gemini")
		}
	}
	// Another client has its own bucket.
	callOK(t, httpClient(t, addrB, tokenTwo), "chat", map[string]any{"prompt": "another client, on B"})
}

// TestReplicasInDifferentDirectories: two API-backend replicas on one
// Redis, each confined to a directory of its own, continue each other's
// sessions: the Gemini API uses no working directory, so the one a
// session was recorded in does not bind it to a replica. Files come from
// the serving replica's project root.
func TestReplicasInDifferentDirectories(t *testing.T) {
	t.Parallel()
	redis := redistest.Start(t)
	e, fake := apiEnv(t)
	dirA, dirB := filepath.Join(e.work, "srv-a"), filepath.Join(e.work, "srv-b")
	for _, d := range []string{dirA, dirB} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dirB, "only-on-b.txt"), []byte("a file of replica B\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	replica := func(dir string) *mcp.ClientSession {
		addr, _ := startHTTP(t, e, "--stateless", "--backend", "api", "--store", redis.URL(0),
			"--cwd", dir, "--allowed-roots", dir, "--project-root", dir)
		return httpClient(t, addr, "")
	}
	a, b := replica(dirA), replica(dirB)

	first := callOK(t, a, "chat", map[string]any{"prompt": "first turn, in A's directory"})
	id, _ := first.Meta["sessionId"].(string)
	if id == "" {
		t.Fatalf("chat on A: no sessionId in %+v", first.Meta)
	}
	callOK(t, b, "chat-reply", map[string]any{"prompt": "second turn, in B's directory", "sessionId": id})
	carries(t, lastStream(t, fake, "second turn, in B's directory"), "first turn, in A's directory", answerOf(first))

	// An expert tool on B continues the thread with B's files.
	res, err := callTool(b, "analyze", map[string]any{"question": "third turn, with B's file", "files": []string{"only-on-b.txt"}, "continuation_id": id})
	if err != nil || res.IsError {
		t.Fatalf("analyze on B: %v %s", err, resultText(res))
	}
	carries(t, lastStream(t, fake, "third turn, with B's file"), "first turn, in A's directory", "second turn, in B's directory", "a file of replica B")

	// And A continues after B.
	callOK(t, a, "chat-reply", map[string]any{"prompt": "fourth turn, in A's directory", "sessionId": id})
	carries(t, lastStream(t, fake, "fourth turn, in A's directory"), "second turn, in B's directory", "third turn, with B's file")
}

package interact

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/leaktest"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// The client against the fake Gemini API over real HTTP on 127.0.0.1.

func TestMain(m *testing.M) { leaktest.VerifyTestMain(m) }

// serveScript starts a server on 127.0.0.1 that answers every request
// with status and body.
func serveScript(t *testing.T, status int, body string) *Client {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(status)
		io.WriteString(w, body)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return newClient(t, "http://"+ln.Addr().String())
}

// Answers that are not an interaction, and an error body of any size.
func TestBadShapes(t *testing.T) {
	for _, body := range []string{`{"status":"completed"}`, `{"id":"../x","status":"completed"}`, `{"id":"x"}`, `[1,2]`, ``} {
		c := serveScript(t, 200, body)
		if _, err := c.Get(geminitest.Context(t), "x"); !errors.Is(err, ErrBadAnswer) {
			t.Errorf("%q: %v, want ErrBadAnswer", body, err)
		}
	}
	for _, n := range []int{1000, 100000} { // read whole, and cut past maxErrorBytes
		c := serveScript(t, 500, `{"error":{"code":500,"message":"`+strings.Repeat(`\u0007x`, n)+`"}}`)
		_, err := c.Get(geminitest.Context(t), "x")
		var ae *APIError
		if !errors.As(err, &ae) || ae.HTTPStatus != 500 || len(err.Error()) > 1000 || strings.ContainsRune(err.Error(), 7) ||
			n == 1000 && !strings.HasPrefix(ae.Message, "xxx") {
			t.Fatalf("an error body of %d: %d bytes: %.200q", n, len(err.Error()), err)
		}
	}
}

func newFake(t *testing.T) (*fakeapi.Server, *Client) {
	t.Helper()
	s := fakeapi.New()
	t.Cleanup(s.Close)
	return s, newClient(t, s.URL())
}

func newClient(t *testing.T, base string) *Client {
	t.Helper()
	c, err := New(Config{APIKey: "test-key", BaseURL: base, HTTPClient: &http.Client{}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// pollDone polls id until its status is done, returning every result seen.
func pollDone(t *testing.T, c *Client, id string) []*Result {
	t.Helper()
	var seen []*Result
	for range 50 {
		r, err := c.Get(geminitest.Context(t), id)
		if err != nil {
			t.Fatalf("get %s: %v", id, err)
		}
		seen = append(seen, r)
		if r.Status.Done() {
			return seen
		}
	}
	t.Fatalf("interaction %s not done after 50 polls", id)
	return nil
}

func TestDeepResearchRunToCitedReport(t *testing.T) {
	s, c := newFake(t)
	const q = "the fake topic [[steps:3]]"
	r, err := c.StartAgent(geminitest.Context(t), AgentRequest{Input: q, ThinkingSummaries: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != Queued || r.Status.Done() || r.Agent != DefaultAgent {
		t.Fatalf("started: %+v", r)
	}
	var body map[string]any
	json.Unmarshal(s.Requests()[0].Body, &body)
	cfg, _ := body["agent_config"].(map[string]any)
	if body["background"] != true || body["agent"] != DefaultAgent || cfg["type"] != "deep-research" ||
		cfg["thinking_summaries"] != "auto" || cfg["visualization"] != "off" || cfg["collaborative_planning"] != false {
		t.Fatalf("create body %s", s.Requests()[0].Body)
	}
	seen := pollDone(t, c, r.ID)
	for i, p := range seen[:len(seen)-1] {
		if p.Status != InProgress || len(p.Thoughts) != i+1 || p.Thoughts[i] != fakeapi.ThoughtText(i+1) || p.Text != "" {
			t.Fatalf("poll %d: %+v", i+1, p)
		}
	}
	done := seen[len(seen)-1]
	if done.Status != Completed || done.Err() != nil || done.Plan || done.Text != fakeapi.ReportText(q) || len(done.Thoughts) != 3 {
		t.Fatalf("done: %+v (err %v)", done, done.Err())
	}
	want := fakeapi.ReportCitations(q)
	if len(done.Citations) != len(want) {
		t.Fatalf("citations %+v, want %+v", done.Citations, want)
	}
	for i, ct := range done.Citations {
		if ct.URL != want[i].URL || ct.Title != want[i].Title || done.Text[ct.Start:ct.End] != "The fake source says so." {
			t.Fatalf("citation %d = %+v", i, ct)
		}
	}
	if done.Usage.Thought != 3*fakeapi.ThoughtTokens || done.Usage.Total != done.Usage.Input+done.Usage.Output+done.Usage.Thought {
		t.Fatalf("usage %+v", done.Usage)
	}
}

func TestStoppedStatusesAreClearErrors(t *testing.T) {
	_, c := newFake(t)
	for final, want := range map[string]string{
		"failed":          "failed: INTERNAL: " + fakeapi.InteractionFailedMessage,
		"incomplete":      "stopped incomplete",
		"budget_exceeded": "budget was exceeded",
		"requires_action": "waiting for function results",
		"cancelled":       "was cancelled",
	} {
		r, err := c.StartAgent(geminitest.Context(t), AgentRequest{Input: "q [[steps:1]] [[final:" + final + "]]"})
		if err != nil {
			t.Fatal(err)
		}
		seen := pollDone(t, c, r.ID)
		done := seen[len(seen)-1]
		if string(done.Status) != final || done.Err() == nil || !strings.Contains(done.Err().Error(), want) ||
			!strings.Contains(done.Err().Error(), r.ID) || len(done.Thoughts) != 1 {
			t.Fatalf("%s: %+v, err %v; want an error saying %q, the thought kept", final, done, done.Err(), want)
		}
		switch final {
		case "incomplete", "budget_exceeded":
			if done.Text == "" || !strings.Contains(done.Err().Error(), "bytes of its answer were produced") {
				t.Fatalf("%s: the partial answer is lost: %+v", final, done)
			}
		case "requires_action":
			if len(done.Calls) != 1 || done.Calls[0] != "lookup" {
				t.Fatalf("calls %v", done.Calls)
			}
		}
	}
}

func TestCollaborativePlanThenApproval(t *testing.T) {
	_, c := newFake(t)
	plan, err := c.StartAgent(geminitest.Context(t), AgentRequest{Input: "topic [[steps:0]]", CollaborativePlanning: true})
	if err != nil {
		t.Fatal(err)
	}
	got := pollDone(t, c, plan.ID)
	p := got[len(got)-1]
	if !p.Plan || p.Text != fakeapi.PlanText("topic [[steps:0]]") || p.Err() != nil {
		t.Fatalf("plan: %+v", p)
	}
	run, err := c.StartAgent(geminitest.Context(t), AgentRequest{Input: "Approved [[steps:0]]", PreviousID: plan.ID})
	if err != nil {
		t.Fatal(err)
	}
	got = pollDone(t, c, run.ID)
	rep := got[len(got)-1]
	if rep.Plan || rep.PreviousID != plan.ID || rep.Text != fakeapi.ReportText("Approved [[steps:0]]") {
		t.Fatalf("approved run: %+v", rep)
	}
}

func TestCancelDeleteAndNotFound(t *testing.T) {
	_, c := newFake(t)
	r, err := c.StartAgent(geminitest.Context(t), AgentRequest{Input: "q [[hold]]"})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if g, err := c.Get(geminitest.Context(t), r.ID); err != nil || g.Status != InProgress {
			t.Fatalf("held: %+v %v", g, err)
		}
	}
	cr, err := c.Cancel(geminitest.Context(t), r.ID)
	if err != nil || cr.Status != Cancelled || len(cr.Thoughts) != 2 || cr.Err() == nil || !strings.Contains(cr.Err().Error(), "was cancelled") {
		t.Fatalf("cancel: %+v %v", cr, err)
	}
	if err := c.Delete(geminitest.Context(t), r.ID); err != nil {
		t.Fatal(err)
	}
	_, err = c.Get(geminitest.Context(t), r.ID)
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), r.ID) || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("get after delete: %v", err)
	}
	if err := c.Delete(geminitest.Context(t), r.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete again: %v", err)
	}
}

func TestAgentsAndUnusableAgent(t *testing.T) {
	s, c := newFake(t)
	s.SetAgents("deep-research-a", "deep-research-b")
	s.DenyAgent("deep-research-b")
	list, err := c.Agents(geminitest.Context(t))
	if err != nil || len(list) != 2 || list[0].Name != "deep-research-a" {
		t.Fatalf("agents: %+v %v", list, err)
	}
	for _, agent := range []string{"deep-research-b", "deep-research-gone"} {
		_, err := c.StartAgent(geminitest.Context(t), AgentRequest{Agent: agent, Input: "q"})
		if !errors.Is(err, ErrAgentUnavailable) || !strings.Contains(err.Error(), `cannot use agent "`+agent+`"`) {
			t.Fatalf("%s: %v", agent, err)
		}
	}
	if len(s.Interactions()) != 0 {
		t.Fatalf("refused creates left interactions: %v", s.Interactions())
	}
	// Many agents come in pages of 50, and at most maxAgents are read.
	var many []string
	for i := range maxAgents + 20 {
		many = append(many, fmt.Sprintf("agent-%d", i))
	}
	s.SetAgents(many...)
	list, err = c.Agents(geminitest.Context(t))
	if err != nil || len(list) != maxAgents || list[maxAgents-1].Name != many[maxAgents-1] {
		t.Fatalf("%d agents, %v", len(list), err)
	}
	pages := 0
	for _, q := range s.Requests() {
		if q.Method == fakeapi.MethodAgentsList {
			pages++
		}
	}
	if pages != 1+maxAgents/50 {
		t.Fatalf("%d list requests, want 1 and %d pages", pages, maxAgents/50)
	}
}

func TestRateLimitAndErrorShapes(t *testing.T) {
	s, c := newFake(t)
	_, err := c.StartAgent(geminitest.Context(t), AgentRequest{Input: "q [[status:429]]"})
	var ae *APIError
	if !errors.Is(err, ErrRateLimited) || !errors.As(err, &ae) || ae.Code != "RESOURCE_EXHAUSTED" || ae.Message != fakeapi.ErrorMessage(429) {
		t.Fatalf("429: %v", err)
	}
	// Google's usual error body, with a numeric code and the name in status.
	s.RequireKey("another-key")
	_, err = c.Get(geminitest.Context(t), "x")
	if !errors.As(err, &ae) || ae.HTTPStatus != 400 || ae.Code != "INVALID_ARGUMENT" || ae.Message != fakeapi.BadKeyMessage {
		t.Fatalf("bad key: %#v", err)
	}
}

func TestHostileAnswers(t *testing.T) {
	_, c := newFake(t)
	ctx := geminitest.Context(t)
	r, err := c.StartAgent(ctx, AgentRequest{Input: "q [[malformed]]"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, r.ID); !errors.Is(err, ErrBadAnswer) {
		t.Fatalf("malformed: %v", err)
	}
	// A status the SDK does not know: still running, no error.
	r, _ = c.StartAgent(ctx, AgentRequest{Input: "q [[steps:0]] [[final:paused]]"})
	g, err := c.Get(ctx, r.ID)
	if err != nil || g.Status != "paused" || g.Status.Known() || g.Status.Done() || g.Err() != nil {
		t.Fatalf("unknown status: %+v %v", g, err)
	}
	// A report past MaxTextBytes is cut; an answer past MaxResponseBytes refused.
	r, _ = c.StartAgent(ctx, AgentRequest{Input: "q [[steps:0]] [[report-bytes:1200000]]"})
	g, err = c.Get(ctx, r.ID)
	if err != nil || !g.Truncated || len(g.Text) > MaxTextBytes || len(g.Text) < MaxTextBytes-8 || len(g.Citations) != 2 {
		t.Fatalf("long report: len %d truncated %v citations %d, %v", len(g.Text), g.Truncated, len(g.Citations), err)
	}
	r, _ = c.StartAgent(ctx, AgentRequest{Input: "q [[steps:0]] [[report-bytes:9000000]]"})
	if _, err := c.Get(ctx, r.ID); !errors.Is(err, ErrBadAnswer) || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("oversize answer: %v", err)
	}
}

func TestBadInputSendsNothing(t *testing.T) {
	s, c := newFake(t)
	ctx := geminitest.Context(t)
	for name, err := range map[string]error{
		"id":       func() error { _, err := c.Get(ctx, "../models"); return err }(),
		"cancel":   func() error { _, err := c.Cancel(ctx, ""); return err }(),
		"empty":    func() error { _, err := c.StartAgent(ctx, AgentRequest{Input: "  "}); return err }(),
		"agent":    func() error { _, err := c.StartAgent(ctx, AgentRequest{Agent: "a/b", Input: "q"}); return err }(),
		"previous": func() error { _, err := c.StartAgent(ctx, AgentRequest{Input: "q", PreviousID: "a b"}); return err }(),
		"nostore": func() error {
			_, err := c.StartModel(ctx, ModelRequest{Model: "m", Input: "q", Background: true, NoStore: true})
			return err
		}(),
		"big": func() error {
			_, err := c.StartModel(ctx, ModelRequest{Model: "m", Input: strings.Repeat("x", maxInputBytes+1)})
			return err
		}(),
		"both": func() error {
			_, err := c.StartModel(ctx, ModelRequest{Model: "m", Input: "q", PreviousID: "p", History: []Message{{Text: "a"}}})
			return err
		}(),
		"history": func() error {
			big := strings.Repeat("x", maxHistoryBytes/2)
			_, err := c.StartModel(ctx, ModelRequest{Model: "m", Input: "q", History: []Message{{Text: big}, {Model: true, Text: big}, {Text: "y"}}})
			return err
		}(),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if n := len(s.Requests()); n != 0 {
		t.Fatalf("bad input made %d requests", n)
	}
	if _, err := New(Config{APIKey: "k", BaseURL: "file:///etc"}); err == nil {
		t.Fatal("a file: base URL accepted")
	}
}

func TestModelInteractionsChainAndStore(t *testing.T) {
	_, c := newFake(t)
	ctx := geminitest.Context(t)
	first, err := c.StartModel(ctx, ModelRequest{Model: "models/gemini-3-flash", Input: "hello"})
	if err != nil || first.Status != Completed || first.Text != fakeapi.InteractionAnswer("hello", 1) || first.Model != "gemini-3-flash" {
		t.Fatalf("first: %+v %v", first, err)
	}
	second, err := c.StartModel(ctx, ModelRequest{Model: "gemini-3-flash", Input: "again", PreviousID: first.ID})
	if err != nil || second.Text != fakeapi.InteractionAnswer("again", 2) {
		t.Fatalf("second: %+v %v", second, err)
	}
	gone, err := c.StartModel(ctx, ModelRequest{Model: "gemini-3-flash", Input: "forget", NoStore: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.StartModel(ctx, ModelRequest{Model: "gemini-3-flash", Input: "after", PreviousID: gone.ID})
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), gone.ID) {
		t.Fatalf("continuing an unstored interaction: %v", err)
	}
	bg, err := c.StartModel(ctx, ModelRequest{Model: "gemini-3-deep-think", Input: "think [[steps:1]]", Background: true})
	if err != nil || bg.Status != Queued {
		t.Fatalf("background: %+v %v", bg, err)
	}
	seen := pollDone(t, c, bg.ID)
	if last := seen[len(seen)-1]; last.Status != Completed || last.Text != fakeapi.InteractionAnswer("think [[steps:1]]", 1) {
		t.Fatalf("background done: %+v", last)
	}
}

// A new Client (a restarted server) given the id resumes polling the same
// interaction.
func TestResumeAfterRestart(t *testing.T) {
	s, c := newFake(t)
	r, err := c.StartAgent(geminitest.Context(t), AgentRequest{Input: "resume me [[steps:2]]"})
	if err != nil {
		t.Fatal(err)
	}
	if g, err := c.Get(geminitest.Context(t), r.ID); err != nil || g.Status != InProgress {
		t.Fatalf("%+v %v", g, err)
	}
	id := r.ID // what a job's record keeps
	c2 := newClient(t, s.URL())
	seen := pollDone(t, c2, id)
	done := seen[len(seen)-1]
	if done.ID != id || done.Text != fakeapi.ReportText("resume me [[steps:2]]") || len(done.Thoughts) != 2 {
		t.Fatalf("resumed: %+v", done)
	}
	creates, gets := 0, 0
	for _, q := range s.Requests() {
		switch {
		case q.Method == fakeapi.MethodInteractionCreate:
			creates++
		case q.Method == fakeapi.MethodInteractionGet && q.Interaction == id:
			gets++
		}
	}
	if creates != 1 || gets != 1+len(seen) {
		t.Fatalf("%d creates and %d gets of %s, want the one interaction polled on (1 and %d)", creates, gets, id, 1+len(seen))
	}
}

// A call cancelled while the API has not answered returns at once with the
// context's cause.
func TestContextCancellation(t *testing.T) {
	arrived := make(chan struct{})
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c := newClient(t, "http://"+ln.Addr().String())
	ctx, cancel := context.WithCancel(geminitest.Context(t))
	done := make(chan error, 1)
	go func() { _, err := c.Get(ctx, "some-id"); done <- err }()
	<-arrived
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled get: %v", err)
	}
}

// A redirect is not followed: the API key would go with it to another host.
func TestRedirectNotFollowed(t *testing.T) {
	other := make(chan string, 1)
	ln2, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv2 := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		other <- r.Header.Get("x-goog-api-key")
	})}
	go srv2.Serve(ln2)
	t.Cleanup(func() { srv2.Close() })
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.RedirectHandler("http://"+ln2.Addr().String()+"/steal", http.StatusFound)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c := newClient(t, "http://"+ln.Addr().String())
	_, err = c.Get(geminitest.Context(t), "some-id")
	var ae *APIError
	if !errors.As(err, &ae) || ae.HTTPStatus != http.StatusFound {
		t.Fatalf("redirected get: %v, want the 302 as an error", err)
	}
	select {
	case key := <-other:
		t.Fatalf("the redirect was followed, with key %q", key)
	default:
	}
}

// The steps, thoughts and citations a Result keeps are bounded; the
// answer, in the last step, is kept.
func TestResultBounds(t *testing.T) {
	steps := []any{}
	for i := range MaxSteps + 100 {
		steps = append(steps, map[string]any{"type": "thought",
			"summary": []any{map[string]any{"type": "text", "text": fmt.Sprintf("thought %d", i)}}})
	}
	var anns []any
	for i := range MaxCitations + 10 {
		anns = append(anns, map[string]any{"type": "url_citation", "url": fmt.Sprintf("https://example.com/%d", i),
			"start_index": 0, "end_index": 4})
	}
	anns = append([]any{map[string]any{"type": "url_citation", "url": "https://example.com/bad", "start_index": 3, "end_index": 99}}, anns...)
	steps = append(steps, map[string]any{"type": "model_output",
		"content": []any{map[string]any{"type": "text", "text": "the report", "annotations": anns}}})
	body, _ := json.Marshal(map[string]any{"id": "big", "status": "completed", "steps": steps})
	c := serveScript(t, 200, string(body))
	r, err := c.Get(geminitest.Context(t), "big")
	if err != nil {
		t.Fatal(err)
	}
	if !r.Truncated || r.Text != "the report" || len(r.Thoughts) != MaxThoughts || len(r.Citations) != MaxCitations {
		t.Fatalf("truncated %v, text %q, %d thoughts, %d citations", r.Truncated, r.Text, len(r.Thoughts), len(r.Citations))
	}
	if last := r.Thoughts[MaxThoughts-1]; last != fmt.Sprintf("thought %d", MaxSteps-2) {
		t.Fatalf("latest thought kept %q, want the last of the steps read", last)
	}
	if b := r.Citations[0]; b.Start != -1 || b.End != -1 || r.Citations[1].End != 4 {
		t.Fatalf("a span past the text is kept: %+v, %+v", b, r.Citations[1])
	}
}

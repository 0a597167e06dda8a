package fakeapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// post sends body to the Server's method for model and returns the answer.
func post(t *testing.T, s *Server, model, method, body string) (*http.Response, []byte) {
	t.Helper()
	u := fmt.Sprintf("%s/v1beta/models/%s:%s", s.URL(), model, method)
	if method == MethodStream {
		u += "?alt=sse"
	}
	resp, err := http.Post(u, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// reqBody builds a request with a system instruction (if non-empty) and the
// given user turns, a model answer between each two.
func reqBody(t *testing.T, system string, turns ...string) string {
	t.Helper()
	var contents []any
	for i, turn := range turns {
		if i > 0 {
			contents = append(contents, map[string]any{"role": "model", "parts": []any{map[string]any{"text": "ok"}}})
		}
		parts := []any{map[string]any{"text": turn}}
		if i == 0 {
			parts = append([]any{map[string]any{"text": "<session_context>\nThis is the Gemini CLI.\n</session_context>"}}, parts...)
		}
		contents = append(contents, map[string]any{"role": "user", "parts": parts})
	}
	m := map[string]any{"contents": contents, "tools": []any{}}
	if system != "" {
		m["systemInstruction"] = map[string]any{"role": "user", "parts": []any{map[string]any{"text": system}}}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sseText returns the candidate text of each data frame.
func sseText(t *testing.T, body []byte) []string {
	t.Helper()
	var texts []string
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			if sc.Text() != "" {
				t.Errorf("unexpected SSE line %q", sc.Text())
			}
			continue
		}
		texts = append(texts, candidateText(t, []byte(line)))
	}
	return texts
}

func candidateText(t *testing.T, b []byte) string {
	t.Helper()
	var r struct {
		Candidates []struct {
			Content struct {
				Role  string
				Parts []struct{ Text string }
			}
			FinishReason string
		}
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("bad response %s: %v", b, err)
	}
	if len(r.Candidates) != 1 || r.Candidates[0].Content.Role != "model" ||
		len(r.Candidates[0].Content.Parts) != 1 || r.Candidates[0].FinishReason != "STOP" {
		t.Fatalf("unexpected response shape %s", b)
	}
	return r.Candidates[0].Content.Parts[0].Text
}

func newServer(t *testing.T) *Server {
	s := New()
	t.Cleanup(s.Close)
	return s
}

func TestStreamAnswerAndRecord(t *testing.T) {
	s := newServer(t)
	before := time.Now()
	resp, body := post(t, s, "gemini-unit", MethodStream, reqBody(t, "be brief", "first", "second question"))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
	want := "fake-api answer: model=gemini-unit contents=3 system=yes last=second question"
	if got := sseText(t, body); len(got) != 1 || got[0] != want {
		t.Errorf("answer = %q, want [%q]", got, want)
	}
	if !strings.HasSuffix(string(body), "\n\n") {
		t.Errorf("SSE frame not ended by a blank line: %q", body)
	}

	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("got %d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != MethodStream || r.Model != "gemini-unit" || r.SystemInstruction != "be brief" ||
		r.NumContents != 3 || r.LastUserText != "second question" || r.Status != 200 || r.Answer != want {
		t.Errorf("recorded %+v", r)
	}
	if r.Time.Before(before) || r.Time.After(time.Now()) {
		t.Errorf("Time = %v, not during the call", r.Time)
	}
	if !strings.Contains(string(r.Body), "second question") {
		t.Errorf("Body not recorded: %q", r.Body)
	}
}

func TestStreamFirstTurnSkipsSessionContext(t *testing.T) {
	s := newServer(t)
	_, body := post(t, s, "m", MethodStream, reqBody(t, "", "héllo wörld, this prompt is longer than forty runes for sure"))
	want := "fake-api answer: model=m contents=1 system=no last=héllo wörld, this prompt is longer than "
	if got := sseText(t, body); len(got) != 1 || got[0] != want {
		t.Errorf("answer = %q, want %q", got, want)
	}
	if r := s.Requests()[0]; r.LastUserText != "héllo wörld, this prompt is longer than forty runes for sure" || r.SystemInstruction != "" {
		t.Errorf("recorded %+v", r)
	}
}

func TestGenerateContentRouterAnswer(t *testing.T) {
	s := newServer(t)
	resp, body := post(t, s, "gemini-router", MethodGenerate, reqBody(t, "route", "[[status:400]] only for streams"))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	text := candidateText(t, body)
	var router struct {
		ComplexityScore     int    `json:"complexity_score"`
		ComplexityReasoning string `json:"complexity_reasoning"`
	}
	if err := json.Unmarshal([]byte(text), &router); err != nil || router.ComplexityScore < 1 || router.ComplexityReasoning == "" {
		t.Errorf("router answer %q: %+v %v", text, router, err)
	}
	if r := s.Requests()[0]; r.Method != MethodGenerate || r.Model != "gemini-router" || r.Status != 200 {
		t.Errorf("recorded %+v", r)
	}
}

func TestStatusDirective(t *testing.T) {
	s := newServer(t)
	for _, code := range []int{400, 429, 500, 503} {
		resp, body := post(t, s, "m", MethodStream, reqBody(t, "", fmt.Sprintf("please fail [[status:%d]] now", code)))
		if resp.StatusCode != code {
			t.Errorf("status = %d, want %d", resp.StatusCode, code)
		}
		var e struct {
			Error struct {
				Code    int
				Message string
				Status  string
			}
		}
		if err := json.Unmarshal(body, &e); err != nil {
			t.Fatalf("error body %s: %v", body, err)
		}
		if e.Error.Code != code || e.Error.Message != ErrorMessage(code) || e.Error.Status == "" {
			t.Errorf("error body %s", body)
		}
		if got := ErrorMessage(code); got != fmt.Sprintf("fake error %d", code) {
			t.Errorf("ErrorMessage(%d) = %q", code, got)
		}
	}
	// A directive in an earlier turn does not fail the new one.
	resp, _ := post(t, s, "m", MethodStream, reqBody(t, "", "[[status:400]]", "fine now"))
	if resp.StatusCode != 200 {
		t.Errorf("directive in history: status %d", resp.StatusCode)
	}
	reqs := s.Requests()
	if len(reqs) != 5 || reqs[0].Status != 400 || reqs[0].Answer != "fake error 400" || reqs[4].Status != 200 {
		t.Errorf("recorded %+v", reqs)
	}
}

func TestSleepDirective(t *testing.T) {
	s := newServer(t)
	start := time.Now()
	resp, _ := post(t, s, "m", MethodStream, reqBody(t, "", "slow [[sleep:300]] answer"))
	if d := time.Since(start); d < 300*time.Millisecond {
		t.Errorf("answered after %v, want at least 300ms", d)
	}
	if resp.StatusCode != 200 {
		t.Errorf("status %d", resp.StatusCode)
	}

	// Close does not wait for a sleeping request.
	s2 := New()
	done := make(chan struct{})
	go func() {
		defer close(done)
		u := s2.URL() + "/v1beta/models/m:streamGenerateContent?alt=sse"
		if resp, err := http.Post(u, "application/json", strings.NewReader(reqBody(t, "", "[[sleep:60000]]"))); err == nil {
			resp.Body.Close()
		}
	}()
	wctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a failure guard only
	defer cancel()
	if err := s2.WaitArrived(wctx, func(rs []Request) bool { return len(rs) == 1 }); err != nil {
		t.Fatal(err)
	}
	closed := time.Now()
	s2.Close()
	s2.Close() // idempotent
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("client still waiting 10s after Close")
	}
	if d := time.Since(closed); d > 5*time.Second {
		t.Errorf("Close took %v", d)
	}
}

func TestBadRequests(t *testing.T) {
	s := newServer(t)
	for _, tc := range []struct {
		method, path string
		body         string
		want         int
	}{
		{"GET", "/v1beta/models/m:streamGenerateContent", "", 404},
		{"POST", "/v1beta/models/m:embedContent", "{}", 404},
		{"GET", "/v1beta/models/m:countTokens", "", 404},
		{"POST", "/v1beta/models/m:generateContent", "not json", 400},
	} {
		req, _ := http.NewRequest(tc.method, s.URL()+tc.path, strings.NewReader(tc.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s: status %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
		}
	}
	if n := len(s.Requests()); n != 4 {
		t.Errorf("recorded %d requests, want 4", n)
	}
}

func TestLoopbackOnly(t *testing.T) {
	s := newServer(t)
	u, err := url.Parse(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme != "http" || u.Hostname() != "127.0.0.1" || u.Port() == "" {
		t.Errorf("URL() = %q, want http://127.0.0.1:PORT", s.URL())
	}
}

func TestRequestsConcurrentAndCopied(t *testing.T) {
	s := newServer(t)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			post(t, s, "m", MethodStream, reqBody(t, "", fmt.Sprintf("prompt %d", i)))
			_ = s.Requests()
		}()
	}
	wg.Wait()
	reqs := s.Requests()
	if len(reqs) != 20 {
		t.Fatalf("got %d requests, want 20", len(reqs))
	}
	reqs[0].Model = "changed"
	if s.Requests()[0].Model == "changed" {
		t.Error("Requests returned the Server's own slice")
	}
}

func TestHome(t *testing.T) {
	s := newServer(t)
	dir := t.TempDir()
	env := s.Home(t, dir)
	want := []string{"HOME=" + dir, "GEMINI_API_KEY=fakeapi-key", "GOOGLE_GEMINI_BASE_URL=" + s.URL()}
	if strings.Join(env, "\n") != strings.Join(want, "\n") {
		t.Errorf("env = %q, want %q", env, want)
	}
	b, err := os.ReadFile(filepath.Join(dir, ".gemini", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	var settings struct {
		Security struct {
			Auth        struct{ SelectedType string }
			FolderTrust struct{ Enabled bool }
		}
		General struct {
			SessionRetention struct{ Enabled *bool }
		}
	}
	if err := json.Unmarshal(b, &settings); err != nil {
		t.Fatalf("settings.json: %v", err)
	}
	if settings.Security.Auth.SelectedType != "gemini-api-key" || settings.Security.FolderTrust.Enabled ||
		settings.General.SessionRetention.Enabled == nil || *settings.General.SessionRetention.Enabled {
		t.Errorf("settings.json = %s", b)
	}
}

// toolBody is a request that offers the functions names and whose contents
// are given as is.
func toolBody(t *testing.T, names []string, contents ...any) string {
	t.Helper()
	var decls []any
	for _, n := range names {
		decls = append(decls, map[string]any{"name": n, "description": "d", "parametersJsonSchema": map[string]any{"type": "object"}})
	}
	b, err := json.Marshal(map[string]any{
		"contents": contents,
		"tools":    []any{map[string]any{"functionDeclarations": decls[:1]}, map[string]any{"functionDeclarations": decls[1:]}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func userText(text string) any {
	return map[string]any{"role": "user", "parts": []any{map[string]any{"text": text}}}
}

func TestCallDirectiveAndFunctionResponse(t *testing.T) {
	s := newServer(t)
	tools := []string{"read_file", "mcp_gemini_chat", "mcp_gemini_chat-reply"}
	prompt := `ask [[call:mcp_gemini_chat:{"prompt":"hi [there]","n":2}]] please`
	resp, body := post(t, s, "m", MethodStream, toolBody(t, tools, userText(prompt)))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	frame, ok := strings.CutPrefix(strings.TrimSuffix(string(body), "\n\n"), "data: ")
	if !ok {
		t.Fatalf("not one SSE frame: %q", body)
	}
	var r struct {
		Candidates []struct {
			Content struct {
				Role  string
				Parts []struct {
					Text         string
					FunctionCall *struct {
						Name string
						Args map[string]any
					}
				}
			}
			FinishReason string
		}
	}
	if err := json.Unmarshal([]byte(frame), &r); err != nil {
		t.Fatalf("frame %s: %v", frame, err)
	}
	if len(r.Candidates) != 1 || len(r.Candidates[0].Content.Parts) != 1 || r.Candidates[0].Content.Role != "model" {
		t.Fatalf("unexpected response shape %s", frame)
	}
	fc := r.Candidates[0].Content.Parts[0].FunctionCall
	if fc == nil || fc.Name != "mcp_gemini_chat" || fc.Args["prompt"] != "hi [there]" || fc.Args["n"] != float64(2) {
		t.Errorf("functionCall = %+v in %s", fc, frame)
	}
	first := s.Requests()[0]
	if first.FunctionCall == nil || first.FunctionCall.Name != "mcp_gemini_chat" ||
		string(first.FunctionCall.Args) != `{"prompt":"hi [there]","n":2}` || first.Answer != "" || first.Status != 200 {
		t.Errorf("recorded %+v", first)
	}
	if strings.Join(first.Tools, ",") != strings.Join(tools, ",") {
		t.Errorf("Tools = %q, want %q", first.Tools, tools)
	}

	// The CLI sends the function's result back; the answer holds it, and
	// the directive in the history does not fire again.
	result := map[string]any{"output": "the answer\nwith \"quotes\""}
	resp, body = post(t, s, "m", MethodStream, toolBody(t, tools,
		userText(prompt),
		map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"name": "mcp_gemini_chat", "args": map[string]any{"prompt": "hi"}}}}},
		map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"id": "c1", "name": "mcp_gemini_chat", "response": result}}}},
	))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	second := s.Requests()[1]
	want := FunctionResultAnswer(second.FunctionResponses)
	if got := sseText(t, body); len(got) != 1 || got[0] != want {
		t.Errorf("answer = %q, want [%q]", got, want)
	}
	if want != "fake-api answer: function results:\nmcp_gemini_chat returned {\"output\":\"the answer\\nwith \\\"quotes\\\"\"}" {
		t.Errorf("FunctionResultAnswer = %q", want)
	}
	if len(second.FunctionResponses) != 1 || second.FunctionResponses[0].Name != "mcp_gemini_chat" || second.FunctionResponses[0].ID != "c1" ||
		second.FunctionCall != nil || second.LastUserText != "" || second.NumContents != 3 {
		t.Errorf("recorded %+v", second)
	}
	var got map[string]any
	if err := json.Unmarshal(second.FunctionResponses[0].Response, &got); err != nil || got["output"] != result["output"] {
		t.Errorf("Response = %s (%v)", second.FunctionResponses[0].Response, err)
	}
}

func TestCallDirectiveBadArguments(t *testing.T) {
	s := newServer(t)
	resp, body := post(t, s, "m", MethodStream, reqBody(t, "", `[[call:f:{not json}]]`))
	if resp.StatusCode != 400 || !strings.Contains(string(body), "not a JSON object") {
		t.Errorf("status %d: %s", resp.StatusCode, body)
	}
	// Without a JSON object it is no directive at all.
	resp, body = post(t, s, "m", MethodStream, reqBody(t, "", `[[call:f:"x"]]`))
	if got := sseText(t, body); resp.StatusCode != 200 || len(got) != 1 || !strings.HasPrefix(got[0], "fake-api answer: model=m") {
		t.Errorf("status %d: %q", resp.StatusCode, got)
	}
}

// frameCalls returns the names and arguments of the functionCall parts of
// a one-event answer.
func frameCalls(t *testing.T, body []byte) []FunctionCall {
	t.Helper()
	frame, ok := strings.CutPrefix(strings.TrimSuffix(string(body), "\n\n"), "data: ")
	if !ok {
		t.Fatalf("not one SSE frame: %q", body)
	}
	var r struct {
		Candidates []struct {
			Content struct {
				Parts []struct {
					Text         string
					FunctionCall *FunctionCall
				}
			}
		}
	}
	if err := json.Unmarshal([]byte(frame), &r); err != nil || len(r.Candidates) != 1 {
		t.Fatalf("frame %s: %v", frame, err)
	}
	var out []FunctionCall
	for _, p := range r.Candidates[0].Content.Parts {
		if p.FunctionCall == nil {
			t.Fatalf("a part without functionCall in %s", frame)
		}
		out = append(out, *p.FunctionCall)
	}
	return out
}

func callsString(fcs []FunctionCall) string {
	var b strings.Builder
	for _, fc := range fcs {
		fmt.Fprintf(&b, "%s%s;", fc.Name, fc.Args)
	}
	return b.String()
}

func TestSeveralCallDirectivesAnswerParallelCalls(t *testing.T) {
	s := newServer(t)
	prompt := `both [[call:mcp_a_x:{"n":1}]] and [[call:mcp_b_y:{"n":2}]]`
	resp, body := post(t, s, "m", MethodStream, toolBody(t, []string{"mcp_a_x", "mcp_b_y"}, userText(prompt)))
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	if got, want := callsString(frameCalls(t, body)), `mcp_a_x{"n":1};mcp_b_y{"n":2};`; got != want {
		t.Errorf("calls = %s, want %s", got, want)
	}
	r := s.Requests()[0]
	if callsString(r.FunctionCalls) != `mcp_a_x{"n":1};mcp_b_y{"n":2};` || r.FunctionCall == nil || r.FunctionCall.Name != "mcp_a_x" {
		t.Errorf("recorded %+v", r)
	}
}

// round is the contents of a request after rounds of function calls: the
// prompt, then per round the model's call and the user's response.
func round(prompt string, rounds int) []any {
	contents := []any{userText(prompt)}
	for i := 0; i < rounds; i++ {
		contents = append(contents,
			map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{"name": "f", "args": map[string]any{}}}}},
			map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{"name": "f", "response": map[string]any{"output": fmt.Sprint(i)}}}}})
	}
	return contents
}

func TestThenCallDirectivesAnswerLaterRounds(t *testing.T) {
	s := newServer(t)
	prompt := `[[call:f:{"r":0}]] [[then-call:f:{"r":1}]] [[then-call:g:{"r":2}]]`
	tools := []string{"f", "g"}
	for r, want := range []string{`f{"r":0};`, `f{"r":1};`, `g{"r":2};`} {
		resp, body := post(t, s, "m", MethodStream, toolBody(t, tools, round(prompt, r)...))
		if resp.StatusCode != 200 {
			t.Fatalf("round %d: status %d: %s", r, resp.StatusCode, body)
		}
		if got := callsString(frameCalls(t, body)); got != want {
			t.Errorf("round %d: calls = %s, want %s", r, got, want)
		}
		if rec := s.Requests()[r]; rec.Round != r || rec.Prompt != prompt {
			t.Errorf("round %d: recorded Round %d, Prompt %q", r, rec.Round, rec.Prompt)
		}
	}
	// Once the directives are used up, the results come back as text.
	_, body := post(t, s, "m", MethodStream, toolBody(t, tools, round(prompt, 3)...))
	if got := sseText(t, body); len(got) != 1 || !strings.HasPrefix(got[0], "fake-api answer: function results:\nf returned") {
		t.Errorf("round 3: %q", got)
	}
}

func TestLoopCallDirectiveAndModeNone(t *testing.T) {
	s := newServer(t)
	prompt := `[[call:f:{}]] [[loop-call:f:{"again":true}]]`
	for _, r := range []int{1, 2, 7} {
		_, body := post(t, s, "m", MethodStream, toolBody(t, []string{"f"}, round(prompt, r)...))
		if got := callsString(frameCalls(t, body)); got != `f{"again":true};` {
			t.Errorf("round %d: calls = %s", r, got)
		}
	}
	// A request that forbids function calls gets the results as text.
	var m map[string]any
	if err := json.Unmarshal([]byte(toolBody(t, []string{"f"}, round(prompt, 3)...)), &m); err != nil {
		t.Fatal(err)
	}
	m["toolConfig"] = map[string]any{"functionCallingConfig": map[string]any{"mode": "NONE"}}
	b, _ := json.Marshal(m)
	_, body := post(t, s, "m", MethodStream, string(b))
	if got := sseText(t, body); len(got) != 1 || !strings.HasPrefix(got[0], "fake-api answer: function results:") {
		t.Errorf("mode NONE: %q", got)
	}
	if rec := s.Requests()[3]; rec.ToolMode != "NONE" || rec.FunctionCall != nil {
		t.Errorf("recorded %+v", rec)
	}
}

// TestBytesDirective: [[bytes:N]] answers N bytes that start with the usual
// answer.
func TestBytesDirective(t *testing.T) {
	s := newServer(t)
	_, body := post(t, s, "m", MethodStream, reqBody(t, "", "[[bytes:5000]] long"))
	got := strings.Join(sseText(t, body), "")
	short := Answer("m", 1, "", "[[bytes:5000]] long")
	if len(got) != 5000 || !strings.HasPrefix(got, short+"\nfiller line 1 ") {
		t.Fatalf("%d bytes in %d events: %.120q", len(got), len(sseText(t, body)), got)
	}
	if r := s.Requests(); len(r) != 1 || r[0].Answer != got {
		t.Fatalf("recorded %+v", r)
	}
}

// events returns the data of each server-sent event of body, decoded.
func events(t *testing.T, body []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for ev := range strings.SplitSeq(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		data, ok := strings.CutPrefix(ev, "data: ")
		if !ok {
			t.Fatalf("event %.80q is no data event", ev)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("event %.80q: %v", data, err)
		}
		out = append(out, m)
	}
	return out
}

// TestHostileDirectives: each hostile directive answers server-sent
// events of the API's format, with what a real API never sends.
func TestHostileDirectives(t *testing.T) {
	s := newServer(t)
	_, body := post(t, s, "m", MethodStream, reqBody(t, "", "[[null-candidate]]"))
	if string(body) != "data: {\"candidates\":[null]}\n\n" {
		t.Errorf("[[null-candidate]]: %q", body)
	}

	_, body = post(t, s, "m", MethodStream, reqBody(t, "", "[[no-finish]] [[chunks:3]] cut"))
	evs := events(t, body)
	if len(evs) != 3 || strings.Contains(string(body), "finishReason") || !strings.Contains(string(body), "usageMetadata") {
		t.Errorf("[[no-finish]]: %d events: %s", len(evs), body)
	}

	_, body = post(t, s, "m", MethodStream, reqBody(t, "", "[[big-frame:100000]]"))
	if evs := events(t, body); len(evs) != 1 || len(body) < 100000 || !strings.Contains(string(body), `"finishReason":"STOP"`) {
		t.Errorf("[[big-frame]]: %d events of %d bytes", len(evs), len(body))
	}

	_, body = post(t, s, "m", MethodStream, reqBody(t, "", "[[call-flood:f:20000]]"))
	evs = events(t, body)
	if len(evs) < 10 || len(body) < 20000 || strings.Contains(string(body), "finishReason") || !strings.Contains(string(body), `"functionCall":{"args":{"filler":"xxx`) {
		t.Errorf("[[call-flood]]: %d events of %d bytes", len(evs), len(body))
	}
	if r := s.Requests(); r[len(r)-1].Sent != int64(len(body)) || r[len(r)-1].Ended {
		t.Errorf("[[call-flood]] recorded %+v, sent %d", r[len(r)-1], len(body))
	}

	// [[drip]] goes on until the client leaves.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1beta/models/m:streamGenerateContent?alt=sse",
		strings.NewReader(reqBody(t, "", "[[drip:1]]")))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	for range 3 {
		line, err := br.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, `data: {"candidates":[{"content":{"parts":[{"text":"drop `) {
			t.Fatalf("[[drip]]: %q %v", line, err)
		}
		br.ReadString('\n')
	}
	cancel()
	resp.Body.Close()
	wctx, wcancel := context.WithTimeout(context.Background(), time.Minute) // a guard only
	defer wcancel()
	if err := s.WaitFor(wctx, func(rs []Request) bool { return len(rs) == 5 && rs[4].Ended }); err != nil {
		t.Fatalf("[[drip]] not recorded as ended: %v", err)
	}
}

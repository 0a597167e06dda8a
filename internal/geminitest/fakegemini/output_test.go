package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
)

func TestTextOutput(t *testing.T) {
	t.Parallel()
	r := newSandbox(t).run("-m", "m", "say hi").mustSucceed(t)
	if want := geminitest.Answer(1, "m", "", "say hi") + "\n"; r.stdout != want {
		t.Errorf("stdout %q, want %q", r.stdout, want)
	}
	if r.stderr != "" {
		t.Errorf("stderr %q, want it empty", r.stderr)
	}
}

func TestJSONOutput(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	r := s.run("--output-format=json", "-m", "m", "say <hi> & bye").mustSucceed(t)
	if r.stderr != colorWarningLine+"\n" {
		t.Errorf("stderr %q, want the 256-color warning", r.stderr)
	}
	// Pretty with two-space indents, and with <, > and & unescaped as JSON.stringify leaves them.
	if !strings.HasPrefix(r.stdout, "{\n  \"session_id\": \"") || !strings.Contains(r.stdout, "say <hi> & bye") {
		t.Errorf("stdout is not pretty, unescaped JSON:\n%s", r.stdout)
	}
	var out struct {
		SessionID string `json:"session_id"`
		Response  string `json:"response"`
		Stats     struct {
			Models map[string]struct {
				API    map[string]int `json:"api"`
				Tokens map[string]int `json:"tokens"`
			} `json:"models"`
			Tools map[string]int `json:"tools"`
			Files map[string]int `json:"files"`
		} `json:"stats"`
	}
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	if !uuidV4.MatchString(out.SessionID) {
		t.Errorf("session_id %q", out.SessionID)
	}
	if want := geminitest.Answer(1, "m", "", "say <hi> & bye"); out.Response != want {
		t.Errorf("response %q, want %q", out.Response, want)
	}
	m := out.Stats.Models["m"]
	if len(out.Stats.Models) != 1 || m.API["totalRequests"] != 1 || m.API["totalLatencyMs"] != 1 ||
		len(m.API) != 3 || m.Tokens["total"] != 2 || m.Tokens["candidates"] != 1 || len(m.Tokens) != 7 {
		t.Errorf("model stats %+v", out.Stats.Models)
	}
	if _, ok := out.Stats.Tools["totalCalls"]; !ok || len(out.Stats.Files) != 2 {
		t.Errorf("tools %v, files %v", out.Stats.Tools, out.Stats.Files)
	}
}

func TestStreamJSONOutput(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	r := s.runWith(strings.NewReader("piped"), "-o", "stream-json", "-m", "m", "-p", "q").mustSucceed(t)
	prompt := "piped\n\nq"
	events := decodeEvents(t, r.stdout)
	if len(events) != 4 {
		t.Fatalf("got %d events, want 4:\n%s", len(events), r.stdout)
	}
	id, _ := events[0]["session_id"].(string)
	if events[0]["type"] != "init" || events[0]["model"] != "m" || !uuidV4.MatchString(id) {
		t.Errorf("init event %v", events[0])
	}
	if e := events[1]; e["type"] != "message" || e["role"] != "user" || e["content"] != prompt {
		t.Errorf("user message event %v", e)
	}
	if e := events[2]; e["type"] != "message" || e["role"] != "assistant" || e["delta"] != true ||
		e["content"] != geminitest.Answer(1, "m", "", prompt) {
		t.Errorf("assistant message event %v", e)
	}
	if e := events[3]; e["type"] != "result" || e["status"] != "success" || e["stats"] == nil || e["error"] != nil {
		t.Errorf("result event %v", e)
	}
	for _, e := range events {
		if _, err := time.Parse(time.RFC3339, e["timestamp"].(string)); err != nil {
			t.Errorf("event %v has a bad timestamp: %v", e, err)
		}
	}
	if list := s.run("--list-sessions").stdout; !strings.Contains(list, id) {
		t.Errorf("the stream-json session %s was not saved:\n%s", id, list)
	}
}

func TestExitDirective(t *testing.T) {
	t.Parallel()
	tests := []struct {
		exit     int
		wantType string
		wantCode int
		wantMsg  string
	}{
		{144, "Error", 400, `{"error":{"code":400,"message":"fake api error 400","status":"INVALID_ARGUMENT"}}`},
		{173, "Error", 429, `{"error":{"code":429,"message":"fake api error 429","status":"RESOURCE_EXHAUSTED"}}`},
		{244, "Error", 500, `{"error":{"code":500,"message":"fake api error 500","status":"INTERNAL"}}`},
		{41, "FatalAuthenticationError", 41, "GEMINI_API_KEY"},
		{53, "FatalTurnLimitedError", 53, "max session turns"},
		{55, "FatalUntrustedWorkspaceError", 55, "trusted directory"},
		{7, "FatalError", 7, "fake failure with exit 7"},
		{130, "FatalError", 130, "fake failure with exit 130"},
		// 511 is no status the Gemini API answers with: exit 255 is an error's own code.
		{255, "FatalError", 255, "fake failure with exit 255"},
	}
	for _, tt := range tests {
		t.Run(strings.ReplaceAll(tt.wantType, "Error", "")+strconv.Itoa(tt.exit), func(t *testing.T) {
			t.Parallel()
			s := newSandbox(t)
			prompt := "please [[exit:" + strconv.Itoa(tt.exit) + "]] now"
			r := s.run("-o", "json", prompt)
			if r.code != tt.exit || r.stdout != "" {
				t.Fatalf("exit %d with stdout %q, want exit %d and no stdout", r.code, r.stdout, tt.exit)
			}
			if !strings.HasPrefix(r.stderr, colorWarningLine+"\n    at fn (file:///fake.js:1:1)\n{\n  \"session_id\"") {
				t.Errorf("stderr does not start with noise and a stack trace:\n%s", r.stderr)
			}
			objects := decodeTrailingObjects(t, r.stderr)
			if len(objects) != 2 || objects[0] != objects[1] {
				t.Fatalf("stderr holds %d error objects, want the same one twice:\n%s", len(objects), r.stderr)
			}
			f := objects[1]
			if !uuidV4.MatchString(f.SessionID) || f.Error.Type != tt.wantType || f.Error.Code != tt.wantCode ||
				!strings.Contains(f.Error.Message, tt.wantMsg) {
				t.Errorf("error object %+v, want type %s, code %d, message with %q", f, tt.wantType, tt.wantCode, tt.wantMsg)
			}
			if tt.wantType == "Error" && !json.Valid([]byte(f.Error.Message)) {
				t.Errorf("an API error's message %q is not JSON", f.Error.Message)
			}
			// The failed turn is not saved, so there is no session to resume.
			s.run("-r", "latest", "hi").mustFail(t, 42, "Invalid session identifier")
		})
	}
}

func TestExitDirectiveKeepsAResumedSession(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	id := s.startSession(t, "first")
	r := s.run("-o", "json", "-r", id, "[[exit:244]]").mustFail(t, 244, `"session_id": "`+id+`"`)
	if r.stdout != "" {
		t.Errorf("stdout %q", r.stdout)
	}
	if _, response := s.runJSON(t, "-r", id, "again"); !strings.Contains(response, "turn=2 ") {
		t.Errorf("after a failed turn the session answered %q, want turn 2", response)
	}
}

func TestExitDirectiveInOtherFormats(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	r := s.run("-o", "stream-json", "[[exit:173]]")
	if r.code != 173 {
		t.Fatalf("exit %d, want 173", r.code)
	}
	events := decodeEvents(t, r.stdout)
	last := events[len(events)-1]
	errObj, _ := last["error"].(map[string]any)
	if len(events) != 3 || events[0]["type"] != "init" || last["type"] != "result" || last["status"] != "error" ||
		errObj["type"] != "Error" || !strings.Contains(errObj["message"].(string), `"code":429`) {
		t.Errorf("stream-json failure events:\n%s", r.stdout)
	}

	r = s.run("[[exit:55]]").mustFail(t, 55, "FatalUntrustedWorkspaceError: ")
	if r.stdout != "" {
		t.Errorf("text failure stdout %q", r.stdout)
	}
	// Out-of-range codes are not directives.
	s.run("[[exit:0]] [[exit:256]]").mustSucceed(t)
}

func TestNoSessionDirective(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	out := s.run("-o", "json", "[[nosession]]").mustSucceed(t).jsonOut(t)
	if _, ok := out["session_id"]; ok {
		t.Errorf("session_id present: %v", out)
	}
	if out["response"] == "" {
		t.Error("no response")
	}
	if !strings.Contains(s.run("--list-sessions").stdout, "(1)") {
		t.Error("the session was not saved")
	}
	r := s.run("-o", "json", "[[nosession]] [[exit:7]]").mustFail(t, 7, "")
	if strings.Contains(r.stderr, "session_id") {
		t.Errorf("failure names a session:\n%s", r.stderr)
	}
}

func TestEmptyDirective(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	out := s.run("-o", "json", "[[empty]]").mustSucceed(t).jsonOut(t)
	if resp, ok := out["response"]; !ok || resp != "" {
		t.Errorf("response %v (present %v), want present and empty", resp, ok)
	}
	if r := s.run("[[empty]]").mustSucceed(t); r.stdout != "\n" {
		t.Errorf("text stdout %q", r.stdout)
	}
}

func TestBadJSONDirective(t *testing.T) {
	t.Parallel()
	for _, format := range []string{"json", "text", "stream-json"} {
		r := newSandbox(t).run("-o", format, "[[badjson]]").mustSucceed(t)
		if r.stdout != "this is not json\n" {
			t.Errorf("%s: stdout %q", format, r.stdout)
		}
	}
}

func TestStdoutDirective(t *testing.T) {
	t.Parallel()
	s := newSandbox(t)
	const n = 5 << 20
	out := s.run("-o", "json", "[[stdout:5242880]]").mustSucceed(t).jsonOut(t)
	response := out["response"].(string)
	if len(response) != n {
		t.Fatalf("response is %d bytes, want %d", len(response), n)
	}
	// The text must be varied, like a real long answer: no line may repeat.
	seen := map[string]bool{}
	for line := range strings.Lines(response) {
		if seen[line] {
			t.Fatalf("line %q repeats", line)
		}
		seen[line] = true
	}
	if r := s.run("[[stdout:10]]").mustSucceed(t); len(r.stdout) != 11 {
		t.Errorf("text stdout %q, want 10 bytes and a newline", r.stdout)
	}
}

func TestStderrDirective(t *testing.T) {
	t.Parallel()
	r := newSandbox(t).run("[[stderr:100000]]").mustSucceed(t)
	if len(r.stderr) != 100000 {
		t.Errorf("stderr is %d bytes, want 100000", len(r.stderr))
	}
	if !strings.HasPrefix(r.stdout, "fake-gemini turn=1 ") {
		t.Errorf("stdout %q, want the normal answer", r.stdout)
	}
}

func TestSleepDirective(t *testing.T) {
	t.Parallel()
	start := time.Now()
	newSandbox(t).run("[[sleep:300]]").mustSucceed(t)
	if elapsed := time.Since(start); elapsed < 300*time.Millisecond {
		t.Errorf("answered after %v, want at least 300ms", elapsed)
	}
}

// decodeEvents decodes JSONL.
func decodeEvents(t *testing.T, jsonl string) []map[string]any {
	t.Helper()
	var events []map[string]any
	sc := bufio.NewScanner(strings.NewReader(jsonl))
	for sc.Scan() {
		var e map[string]any
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("line %q is not JSON: %v", sc.Text(), err)
		}
		events = append(events, e)
	}
	return events
}

// failureObject is the error object the real CLI prints on stderr in json mode.
type failureObject struct {
	SessionID string `json:"session_id"`
	Error     struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Code    int    `json:"code"`
	} `json:"error"`
}

// decodeTrailingObjects decodes the JSON objects that make up stderr from its first line that is
// just "{" onwards, the way a wrapper would find them after the noise.
func decodeTrailingObjects(t *testing.T, stderr string) []failureObject {
	t.Helper()
	start := strings.Index(stderr, "\n{\n")
	if start < 0 {
		t.Fatalf("no JSON object on stderr:\n%s", stderr)
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(stderr[start:])))
	dec.DisallowUnknownFields()
	var objects []failureObject
	for dec.More() {
		var f failureObject
		if err := dec.Decode(&f); err != nil {
			t.Fatalf("decoding stderr: %v\n%s", err, stderr)
		}
		objects = append(objects, f)
	}
	return objects
}

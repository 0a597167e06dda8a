package geminicli

import (
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

// realSuccess is the shape gemini 0.61.0 prints on stdout (trimmed stats).
const realSuccess = `{
  "session_id": "b9aadb6c-5aca-4c65-b929-02b095cc2b94",
  "response": "ANSWER to: mcp",
  "stats": {
    "models": {
      "gemini-x": {
        "api": {"totalRequests": 1, "totalErrors": 0, "totalLatencyMs": 59}
      }
    }
  }
}`

// realFailure is what gemini 0.61.0 prints on stderr for an API 400.
const realFailure = `Warning: 256-color support not detected.
Error when talking to Gemini API Full report available at: /tmp/gemini-client-error.json
[API Error: {"error":{"code":400,"message":"fake error 400","status":"X"}}]
    at throwErrorIfNotOK (file:///x/chunk.js:267833:24)
    at async Turn.run (file:///x/chunk.js:333001:24) {
  status: 400
}
{
  "session_id": "2faf1285-b89a-42af-ab2b-26c6f421749f",
  "error": {
    "type": "Error",
    "message": "{\"error\":{\"code\":400,\"message\":\"fake error 400\",\"status\":\"X\"}}",
    "code": 400
  }
}
`

func TestParseOutputSuccess(t *testing.T) {
	t.Parallel()
	out, err := ParseOutput([]byte(realSuccess))
	if err != nil {
		t.Fatal(err)
	}
	if out.SessionID != "b9aadb6c-5aca-4c65-b929-02b095cc2b94" || out.Response == nil || *out.Response != "ANSWER to: mcp" {
		t.Fatalf("got %+v", out)
	}
	if len(out.Stats) == 0 {
		t.Fatal("stats lost")
	}
}

func TestParseOutputAfterNoise(t *testing.T) {
	t.Parallel()
	in := "Loaded cached credentials.\n{not json\n" + realSuccess + "\n"
	out, err := ParseOutput([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if *out.Response != "ANSWER to: mcp" {
		t.Fatalf("got %q", *out.Response)
	}
}

func TestParseOutputStderrTwice(t *testing.T) {
	t.Parallel()
	// The CLI sometimes prints its error object twice; the last one wins,
	// and the stack trace's braces are not taken for it.
	second := strings.Replace(realFailure[strings.Index(realFailure, "{\n  \"session_id\""):], "fake error 400", "second copy", 1)
	out, err := ParseOutput([]byte(realFailure + second))
	if err != nil {
		t.Fatal(err)
	}
	if out.Error == nil || !strings.Contains(out.Error.Message, "second copy") {
		t.Fatalf("got %+v", out.Error)
	}
	if c, ok := out.Error.CodeInt(); !ok || c != 400 {
		t.Fatalf("code %v %v", c, ok)
	}
}

func TestParseOutputRejects(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "   \n", "this is not json\n", `{"other":1}`, "[1,2]", `{"error":{}}`} {
		if out, err := ParseOutput([]byte(in)); err == nil {
			t.Errorf("ParseOutput(%q) = %+v, want an error", in, out)
		}
	}
}

func TestSplitAPIMessage(t *testing.T) {
	t.Parallel()
	text, status, code := splitAPIMessage(`{"error":{"code":429,"message":"Resource exhausted","status":"RESOURCE_EXHAUSTED"}}`)
	if text != "Resource exhausted" || status != "RESOURCE_EXHAUSTED" || code != 429 {
		t.Fatalf("got %q %q %d", text, status, code)
	}
	text, _, code = splitAPIMessage(`[API Error: {"error":{"code":500,"message":"boom","status":"INTERNAL"}}]`)
	if text != "boom" || code != 500 {
		t.Fatalf("wrapped: got %q %d", text, code)
	}
	if text, _, code = splitAPIMessage("plain words"); text != "plain words" || code != 0 {
		t.Fatalf("plain: got %q %d", text, code)
	}
}

func FuzzParseOutput(f *testing.F) {
	for _, s := range []string{realSuccess, realFailure, "", "{", "{\n{\n", `{"response":""}`, `{"session_id":"x","error":{"type":"E","message":"m","code":"41"}}`, "noise\n{\"response\":\"a\"}\n{\"response\":\"b\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := ParseOutput(b)
		if err != nil {
			return
		}
		if !out.looksValid() {
			t.Fatalf("accepted an object that does not look like CLI output: %+v", out)
		}
		if out.Error != nil {
			out.Error.CodeInt()
			splitAPIMessage(out.Error.Message)
		}
	})
}

// TestOutputUsageSumsModels: the usage adds up every model's tokens, the
// cached ones included.
func TestOutputUsageSumsModels(t *testing.T) {
	o := Output{Stats: []byte(`{"models":{
		"gemini-2.5-flash-lite":{"tokens":{"prompt":10,"candidates":2,"thoughts":0,"cached":0}},
		"gemini-2.5-pro":{"tokens":{"prompt":100,"candidates":20,"thoughts":7,"cached":60}}}}`)}
	u := o.Usage()
	if u == nil || *u != (backend.Usage{PromptTokens: 110, OutputTokens: 22, ThinkingTokens: 7, CachedTokens: 60}) {
		t.Errorf("usage %+v", u)
	}
}

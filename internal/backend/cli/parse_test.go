package cli

import (
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
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

// TestUsageCachedTokens: the stats' cached tokens (the API's implicit
// caching) are reported beside the prompt's.
func TestUsageCachedTokens(t *testing.T) {
	t.Parallel()
	o := &Output{Stats: []byte(`{"models":{"gemini-2.5-flash":{"tokens":{"input":900,"prompt":3000,"candidates":20,"total":3020,"cached":2100,"thoughts":5,"tool":0}}}}`)}
	u := o.Usage()
	if u == nil || *u != (backend.Usage{PromptTokens: 3000, OutputTokens: 20, ThinkingTokens: 5, CachedTokens: 2100}) {
		t.Fatalf("usage %+v", u)
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

// realList is `gemini --list-sessions` from 0.61.0, titles included.
const realList = `
Available sessions for this project (3):
  1. mcp (Just now) [b9aadb6c-5aca-4c65-b929-02b095cc2b94]
  2. a (title) with [brackets] (5 minutes ago) [a11a840f-092c-4b40-bb38-f8efd2d5e0b5]
  3. {"reasoning": "r", "complexity_score": 50} (Just now, current) [83762DA1-bb59-4a1e-b6df-4c014f7112fe]
`

func TestParseSessionList(t *testing.T) {
	t.Parallel()
	list, err := ParseSessionList(realList)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 3 {
		t.Fatalf("got %d sessions: %+v", len(list), list)
	}
	if list[1].Title != "a (title) with [brackets]" || list[1].When != "5 minutes ago" || list[1].Index != 2 {
		t.Fatalf("line 2: %+v", list[1])
	}
	newest, ok := Newest(list)
	if !ok || newest.ID != "83762da1-bb59-4a1e-b6df-4c014f7112fe" {
		t.Fatalf("newest: %+v", newest)
	}
	empty, err := ParseSessionList("No previous sessions found for this project.\n")
	if err != nil || len(empty) != 0 {
		t.Fatalf("empty: %v %v", empty, err)
	}
	if _, ok := Newest(empty); ok {
		t.Fatal("Newest of an empty list")
	}
	if _, err := ParseSessionList("Usage: gemini [options]\n"); err == nil {
		t.Fatal("help text accepted as a session list")
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

func FuzzParseSessionList(f *testing.F) {
	for _, s := range []string{realList, "No previous sessions found for this project.\n", "", "  1. x () [00000000-0000-0000-0000-000000000000]", "\x00\n  99999999999999999999. t (n) [b9aadb6c-5aca-4c65-b929-02b095cc2b94]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		list, err := ParseSessionList(s)
		if err != nil {
			return
		}
		for _, l := range list {
			if !session.IsUUID(l.ID) || strings.ToLower(l.ID) != l.ID {
				t.Fatalf("bad id %q", l.ID)
			}
			if l.Index < 0 {
				t.Fatalf("negative index %d", l.Index)
			}
		}
	})
}

package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestShrinkOversized: the top-level string arguments of tools/call
// requests over the limit, and only those, are replaced by the marker of
// their decoded size; everything else of the message is kept byte for
// byte, and what is left is valid JSON.
func TestShrinkOversized(t *testing.T) {
	const limit = 10
	big := strings.Repeat("a", 11)
	for _, tc := range []struct {
		name, in, want string
	}{
		{"a prompt over the limit", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"chat","arguments":{"prompt":"` + big + `","model":"m"}}}`,
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"chat","arguments":{"prompt":"\u0000gemini-mcp-server: oversized argument of 11 bytes","model":"m"}}}`},
		{"at the limit", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"chat","arguments":{"prompt":"` + big[1:] + `","x":"` + big[1:] + `"}}}`, ""},
		{"the method after the params, white space, several arguments", ` { "params" : { "arguments" : { "a" : "` + big + `" , "b" : 12345678901 , "c" : "` + big + big + `" } } , "method" : "tools/call" , "id" : 2 } `,
			` { "params" : { "arguments" : { "a" : "\u0000gemini-mcp-server: oversized argument of 11 bytes" , "b" : 12345678901 , "c" : "\u0000gemini-mcp-server: oversized argument of 22 bytes" } } , "method" : "tools/call" , "id" : 2 } `},
		{"escaped keys and method", `{"\u006dethod":"tools\/call","params":{"arguments":{"prompt":"` + big + `"}},"id":3}`,
			`{"\u006dethod":"tools\/call","params":{"arguments":{"prompt":"\u0000gemini-mcp-server: oversized argument of 11 bytes"}},"id":3}`},
		{"a key of another case is another key", `{"Method":"tools/call","params":{"arguments":{"prompt":"` + big + `"}},"id":3}`, ""},
		{"the last method counts", `{"method":"tools/call","method":"prompts/get","params":{"arguments":{"prompt":"` + big + `"}},"id":3}`, ""},
		{"another method", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"x","arguments":{"prompt":"` + big + `"}}}`, ""},
		{"a nested string", `{"method":"tools/call","params":{"arguments":{"files":["` + big + `"],"o":{"s":"` + big + `"}}},"id":4}`, ""},
		{"a string elsewhere", `{"method":"tools/call","params":{"name":"` + big + `","_meta":{"s":"` + big + `"},"arguments":{}},"id":4}`, ""},
		{"a batch", `[{"method":"tools/call","params":{"arguments":{"p":"` + big + `"}},"id":1},{"method":"ping","id":2},{"method":"tools/call","params":{"arguments":{"q":"` + big + `"}},"id":3}]`,
			`[{"method":"tools/call","params":{"arguments":{"p":"\u0000gemini-mcp-server: oversized argument of 11 bytes"}},"id":1},{"method":"ping","id":2},{"method":"tools/call","params":{"arguments":{"q":"\u0000gemini-mcp-server: oversized argument of 11 bytes"}},"id":3}]`},
		{"not JSON", `{"method":"tools/call","params":{"arguments":{"p":"` + big + `"}}`, ""},
		// Escapes count as what they decode to: \n one byte, \u00e9 two,
		// a surrogate pair four, an unpaired surrogate and a byte of
		// invalid UTF-8 three each (U+FFFD).
		{"escapes", `{"method":"tools/call","params":{"arguments":{"p":"\n\n\n\n\n\n\n\n\n\n\n","q":"\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9","r":"\ud83d\ude00\ud83d\ude00\ud83d","s":"` + "\xff\xff\xff\xff" + `","t":"\n\n\n\n\n\n\n\n\n\n"}},"id":5}`,
			`{"method":"tools/call","params":{"arguments":{"p":"\u0000gemini-mcp-server: oversized argument of 11 bytes","q":"\u0000gemini-mcp-server: oversized argument of 12 bytes","r":"\u0000gemini-mcp-server: oversized argument of 11 bytes","s":"\u0000gemini-mcp-server: oversized argument of 12 bytes","t":"\n\n\n\n\n\n\n\n\n\n"}},"id":5}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, shrunk := shrinkOversized([]byte(tc.in), limit)
			want := tc.want
			if want == "" {
				want = tc.in
			}
			if string(got) != want || shrunk != (tc.want != "") {
				t.Fatalf("got (shrunk %v)\n%s\nwant\n%s", shrunk, got, want)
			}
			if shrunk && !json.Valid(got) {
				t.Fatalf("not valid JSON: %s", got)
			}
		})
	}
}

// FuzzDecodedLen: decodedLen counts the bytes encoding/json decodes a
// valid JSON string to, and shrinkOversized leaves valid JSON valid.
func FuzzDecodedLen(f *testing.F) {
	for _, s := range []string{`""`, `"abc"`, `"\n\t\"\\\/"`, `"\u00e9\u20ac\ud83d\ude00"`, `"\ud800"`, `"\udc00\ud800x"`, "\"\xff\xfe\xc3\"", `"\ud83d\u0041"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		var s string
		if json.Unmarshal([]byte(tok), &s) != nil || !strings.HasPrefix(tok, `"`) || !strings.HasSuffix(tok, `"`) {
			return
		}
		if got := decodedLen([]byte(tok)); got != len(s) {
			t.Fatalf("decodedLen(%q) = %d, encoding/json decodes %d bytes", tok, got, len(s))
		}
		msg := `{"method":"tools/call","params":{"arguments":{"p":` + tok + `}}}`
		if out, _ := shrinkOversized([]byte(msg), 1); !json.Valid(out) {
			t.Fatalf("shrinkOversized(%s) = %s, not valid JSON", msg, out)
		}
	})
}

// TestOversizedPromptRefusedUndecoded: a 5 MiB prompt over HTTP is refused
// as the tool refuses a prompt over --max-prompt-bytes, for chat (an
// error result) and an expert tool (invalid params), and the server
// allocates about the body and little more: before, the SDK decoded the
// prompt a dozen times over (168 MiB for the call) before chat saw it.
// Not parallel: the bound is on what the whole process allocates.
func TestOversizedPromptRefusedUndecoded(t *testing.T) {
	h := newHTTPHarness(t, HTTPOptions{MaxBodyBytes: 13 << 20, MaxPromptBytes: 1 << 20})
	_, _, sid := initSession(t, h.url, "")
	postJSON(t, h.url+PathMCP, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`).Body.Close()
	prompt := strings.Repeat("a", 5<<20)
	for _, tc := range []struct{ tool, arg, want string }{
		{"chat", "prompt", `"result":{"content":[{"type":"text","text":"Error executing gemini: prompt is too large: 5242880 bytes, the limit is 1048576 bytes (--max-prompt-bytes)"}],"isError":true}`},
		{"chat-reply", "systemPrompt", `"isError":true`},
	} {
		args, _ := json.Marshal(map[string]string{"prompt": "hi", tc.arg: prompt})
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, tc.tool, args)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		answer := postSession(t, h.url, sid, body)
		runtime.ReadMemStats(&after)
		alloc := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %.1f MiB allocated for a %.1f MiB body", tc.tool, float64(alloc)/(1<<20), float64(len(body))/(1<<20))
		if !strings.Contains(answer, tc.want) || !strings.Contains(answer, tc.arg+" is too large: 5242880 bytes") {
			t.Errorf("%s with a 5 MiB %s: %.500s", tc.tool, tc.arg, answer)
		}
		if alloc > 2*uint64(len(body)) {
			t.Errorf("%s: %d bytes allocated for a %d-byte body: the argument was decoded", tc.tool, alloc, len(body))
		}
	}
	if inv := h.invocations(); len(inv) != 0 {
		t.Errorf("the CLI ran %d times", len(inv))
	}
}

// postSession posts body in session sid and returns the answer's body.
func postSession(t *testing.T, base, sid, body string) string {
	t.Helper()
	resp := postJSON(t, base+PathMCP, sid, body)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// TestStdioOversizedPromptUndecoded: on stdio, the line filter hands the
// SDK a tool call whose prompt is over the limit as the marker of its
// size, and the tool refuses it as it refuses a prompt over the limit.
func TestStdioOversizedPromptUndecoded(t *testing.T) {
	t.Parallel()
	prompt := strings.Repeat("é", 600<<10) // 1.2 MB, over 1 MiB
	args, _ := json.Marshal(map[string]string{"current_analysis": prompt})
	line := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"thinkdeep","arguments":%s}}`, args) + "\n"
	f := newLineFilter(strings.NewReader(line), io.Discard, stdioLineLimit(1<<20))
	f.maxPrompt = 1 << 20
	got, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"thinkdeep","arguments":{"current_analysis":"\u0000gemini-mcp-server: oversized argument of %d bytes"}}}`+"\n", len(prompt))
	if got != want {
		t.Fatalf("the SDK gets %.300q, want %q", got, want)
	}
	if !utf8.ValidString(got) {
		t.Fatal("not UTF-8")
	}
}

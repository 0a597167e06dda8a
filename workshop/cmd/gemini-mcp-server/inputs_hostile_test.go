package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostileArgumentsStdio sends, as raw JSON-RPC lines no SDK client
// would write, each tool's arguments at and past their limits: numbers
// as strings, NaN's stand-ins (1e309), nulls where values go, duplicate
// keys (the last one counts, for the check and the call alike), unknown
// arguments nested 9,000 deep (an invalid request: the line filter takes
// 512 levels), 10,000-entry arrays, a 200 KB path (a cwd was quoted whole,
// twice: 400 KB of error). Each is a clear error of its tool (an error
// result, or invalid params for an expert tool) of a few KiB at most,
// quoting no argument whole, and the job they aim at runs on unharmed.
func TestHostileArgumentsStdio(t *testing.T) {
	t.Parallel()
	e, _ := apiEnv(t)
	if err := os.WriteFile(filepath.Join(e.work, "a.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := startRawStdio(t, e, "--backend", "api")
	r.send(`{"jsonrpc":"2.0","id":"job","method":"tools/call","params":{"name":"chat","arguments":{"prompt":"[[stall]] a running job","background":true}}}`)
	id := uuidRE.FindString(string(r.next().raw))
	if id == "" {
		t.Fatal("no job started")
	}
	big := strings.Repeat("x", 200000)
	deep := strings.Repeat("[", 9000) + strings.Repeat("]", 9000)
	files := "[" + strings.Repeat(`"a.txt",`, 9999) + `"a.txt"]`
	urls := "[" + strings.Repeat(`"https://example.com/",`, 9999) + `"https://example.com/"]`
	for i, c := range []struct{ tool, args, want string }{
		{"job", `{"jobId":"` + strings.ToUpper(id) + `"}`, "is not a job id"},
		{"job", `{"jobId":"` + id + `","jobId":"nope"}`, `job id \"nope\" is not a job id`},
		{"job", `{"jobId":"` + id + `","wait":"5"}`, `want \"number\"`},
		{"job", `{"jobId":"` + id + `","wait":1e309}`, `want \"number\"`},
		{"job", `{"jobId":"` + id + `","wait":1e308}`, "wait must be from 0 to 60 seconds"},
		{"job", `{"jobId":"` + id + `","wait":-1e-300}`, "wait must be from 0 to 60 seconds"},
		{"job", `{"jobId":"` + id + `","wait":null}`, `want \"number\"`},
		{"job", `{"jobId":"` + id + `","cancel":"true"}`, `want \"boolean\"`},
		{"job", `{"jobId":"` + id + `","cancel":1}`, `want \"boolean\"`},
		{"job", `{"jobId":null}`, `want \"string\"`},
		{"job", `{"jobId":["` + id + `"]}`, `want \"string\"`},
		{"job", `{"jobId":"` + id + `","x":` + deep + `}`, "nested deeper than 512 levels"},
		{"job", `{"jobId":"` + id + `","Cancel":true}`, `unknown argument \"Cancel\"`},
		{"job", `[]`, "cannot unmarshal"},
		{"research", `{"query":"q","urls":` + urls + `}`, "urls has 10000 URLs"},
		{"research", `{"query":"q","files":` + files + `}`, "10000 files entries"},
		{"research", `{"query":"q","plan":true,"continue_from":"` + id + `"}`, "no research job of this caller"},
		{"research", `{"query":"q","continue_from":"` + big + `"}`, "no research job of this caller"},
		{"research", `{"query":"q","agent":"` + big + `"}`, "is not an agent name"},
		{"research", `{"query":"q","thinking_summaries":null}`, `want \"boolean\"`},
		{"image", `{"prompt":"p","aspect_ratio":"` + big + `"}`, "aspect_ratio must be one of"},
		{"sessions", `{"limit":"5"}`, `want \"integer\"`},
		{"sessions", `{"cursor":"` + big + `"}`, "invalid cursor"},
		{"sessions", `{"cwd":"` + big + `"}`, "cwd"},
		{"chat", `{"prompt":"p","cwd":"` + big + `"}`, "cwd"},
		{"chat", `{"prompt":"p","files":` + files + `}`, "10000 files entries"},
		{"chat-page", `{"answerId":"` + big + `","page":2}`, "is not an answer id"},
		{"chat-page", `{"answerId":"` + id + `","page":1e300}`, "cannot unmarshal number"},
		{"thinkdeep", `{"current_analysis":"p","cwd":"` + big + `"}`, `"code":-32602`},
		{"thinkdeep", `{"current_analysis":"p","background":"true"}`, `"code":-32602`},
	} {
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, i, c.tool, c.args))
		m := r.next()
		raw := string(m.raw)
		refused := m.Error != nil && (m.Error.Code == -32602 || m.Error.Code == -32600) || strings.Contains(raw, `"isError":true`)
		if !refused || !strings.Contains(raw, c.want) || len(raw) > 4<<10 {
			t.Errorf("%s %.80s…: %d bytes, want a refusal saying %q: %.400s", c.tool, c.args, len(raw), c.want, raw)
		}
	}
	r.send(`{"jsonrpc":"2.0","id":"end","method":"tools/call","params":{"name":"job","arguments":{"jobId":"` + id + `"}}}`)
	if m := r.next(); !strings.Contains(string(m.raw), `"jobStatus":"working"`) || strings.Contains(string(m.raw), "cancelRequested") {
		t.Errorf("the job after the attacks: %.400s", m.raw)
	}
}

// TestHostileArgumentsNotEchoed: a 200 KB value in each text, choice and
// list argument of every tool that takes one is answered in at most
// 4 KiB, whether refused or not: a choice (thinking_mode, file_search, an
// expert tool's review_type), a temperature as a string and a files entry
// too long for the system were quoted whole, some twice (the message and
// the expert tools' error data): up to 400 KB of error for one argument.
func TestHostileArgumentsNotEchoed(t *testing.T) {
	t.Parallel()
	e, _ := apiEnv(t)
	if err := os.WriteFile(filepath.Join(e.work, "a.go"), []byte("package a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := startRawStdio(t, e, "--backend", "api")
	big := `"` + strings.Repeat("x", 200000) + `"`
	base := map[string]string{"chat": `"prompt":"p"`, "chat-reply": `"prompt":"p"`, "job": `"jobId":"x"`, "thinkdeep": `"current_analysis":"p"`,
		"analyze": `"question":"q","files":["a.go"]`, "codereview": `"files":["a.go"],"context":"c"`, "debug": `"error_description":"e"`,
		"precommit": `"path":"."`, "research": `"query":"q"`, "image": `"prompt":"p"`}
	n := 0
	for tool, names := range map[string][]string{
		"chat":       {"continuation_id", "file_search", "temperature", "thinking_mode", "files[]", "urls[]", "model", "cwd"},
		"chat-reply": {"sessionId", "file_search", "thinking_mode", "temperature"},
		"thinkdeep":  {"continuation_id", "file_search", "focus_areas[]", "thinking_mode", "temperature", "files[]"},
		"analyze":    {"analysis_type", "continuation_id", "files[]"},
		"codereview": {"review_type", "severity_filter", "files[]"},
		"debug":      {"file_search", "thinking_mode"},
		"precommit":  {"path", "review_type"},
		"research":   {"files[]", "urls[]", "agent", "continue_from"},
		"image":      {"files[]", "model", "size", "aspect_ratio", "save_to"},
	} {
		for _, name := range names {
			v := big
			if list, ok := strings.CutSuffix(name, "[]"); ok {
				name, v = list, "["+big+"]"
			}
			n++
			r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{%s,%q:%s}}}`, n, tool, base[tool], name, v))
			if m := r.next(); len(m.raw) > 4<<10 {
				t.Errorf("%s with a %d-byte %s: %d bytes: %.300s", tool, len(big), name, len(m.raw), m.raw)
			}
		}
	}
	// Unknown arguments: 10,000 of them, or one named by 200 KB, were
	// each named in the error, the expert tools' with the list of the
	// arguments they take after each (4 MB of error for 110 KB sent).
	var keys strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&keys, `,"k%05d":1`, i)
	}
	for _, tool := range []string{"chat", "job", "thinkdeep", "codereview"} {
		for _, extra := range []string{keys.String(), `,` + big + `:1`} {
			n++
			r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%q,"arguments":{%s%s}}}`, n, tool, base[tool], extra))
			m := r.next()
			if raw := string(m.raw); len(raw) > 4<<10 || !strings.Contains(raw, "unknown argument") {
				t.Errorf("%s with %d bytes of unknown arguments: %d bytes: %.300s", tool, len(extra), len(raw), raw)
			}
		}
	}
}

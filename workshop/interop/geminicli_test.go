package interop

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// geminiHome is a throwaway home for the real Gemini CLI, talking to a fake
// Gemini API, with mcpServers in its settings.
type geminiHome struct {
	cli  string
	api  *fakeapi.Server
	home string
	work string // the CLI's working directory
	env  []string
}

func newGeminiHome(t *testing.T, cli string) *geminiHome {
	t.Helper()
	g := &geminiHome{cli: cli, api: fakeapi.New(), home: t.TempDir(), work: t.TempDir()}
	t.Cleanup(g.api.Close)
	g.env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"TMPDIR=" + t.TempDir(),
		"GEMINI_CLI_NO_RELAUNCH=true",
		"NO_COLOR=1",
	}, g.api.Home(t, g.home)...)
	return g
}

// setServers writes servers as mcpServers into the CLI's settings.json, in
// the shape the README documents.
func (g *geminiHome) setServers(t *testing.T, servers map[string]any) {
	t.Helper()
	geminitest.SetSetting(t, g.home, "mcpServers", servers)
}

// run runs the CLI with args in its working directory.
func (g *geminiHome) run(t *testing.T, args ...string) runResult {
	t.Helper()
	res := run(t, 2*time.Minute, g.env, g.work, g.cli, args...)
	t.Logf("gemini %s: exit %d in %v", strings.Join(args, " "), res.code, res.elapsed.Round(time.Millisecond))
	return res
}

// stdioEntry is the settings entry that starts s over stdio.
func stdioEntry(s *server) map[string]any {
	env := map[string]any{}
	for k, v := range s.env {
		env[k] = v
	}
	return map[string]any{"command": serverBin, "args": s.args(), "env": env}
}

// TestGeminiCLIMCPList checks that `gemini mcp list` connects to the server
// over stdio, Streamable HTTP and SSE (with a bearer token), and that it
// does tell a server it cannot use: a wrong token is Disconnected.
func TestGeminiCLIMCPList(t *testing.T) {
	cli := fakeapi.RealCLI(t)
	if serverBin == "" {
		t.Fatal("the server binary was not built")
	}
	t.Parallel()
	g := newGeminiHome(t, cli)
	stdio := newServer(t, serverOpts{})
	h := newServer(t, serverOpts{http: true, tokens: []string{testToken}})
	auth := map[string]any{"Authorization": "Bearer " + testToken}
	g.setServers(t, map[string]any{
		"gmcp-stdio":     stdioEntry(stdio),
		"gmcp-http":      map[string]any{"url": h.base + "/mcp", "type": "http", "headers": auth},
		"gmcp-sse":       map[string]any{"url": h.base + "/sse", "type": "sse", "headers": auth},
		"gmcp-bad-token": map[string]any{"url": h.base + "/mcp", "type": "http", "headers": map[string]any{"Authorization": "Bearer wrong-token-0123456789"}},
	})
	res := g.run(t, "mcp", "list")
	out := res.stdout + res.stderr
	if res.code != 0 {
		t.Fatalf("gemini mcp list: exit %d\n%s", res.code, out)
	}
	for _, want := range []string{
		`✓ gmcp-stdio: ` + regexp.QuoteMeta(serverBin) + ` .*\(stdio\) - Connected`,
		`✓ gmcp-http: ` + regexp.QuoteMeta(h.base) + `/mcp \(http\) - Connected`,
		`✓ gmcp-sse: ` + regexp.QuoteMeta(h.base) + `/sse \(sse\) - Connected`,
		`✗ gmcp-bad-token: ` + regexp.QuoteMeta(h.base) + `/mcp \(http\) - Disconnected`,
	} {
		if !regexp.MustCompile(`(?m)^` + want + `$`).MatchString(out) {
			t.Errorf("gemini mcp list does not say %s:\n%s", want, out)
		}
	}
}

// TestGeminiCLIUntrustedServer pins why TestGeminiCLICallsChat's settings say
// "trust": headless, the CLI does not offer an untrusted server's tools to
// the model at all (they would need a confirmation nobody can give), unless
// it runs with --yolo.
func TestGeminiCLIUntrustedServer(t *testing.T) {
	cli := fakeapi.RealCLI(t)
	if serverBin == "" {
		t.Fatal("the server binary was not built")
	}
	t.Parallel()
	g := newGeminiHome(t, cli)
	g.setServers(t, map[string]any{"gemini": stdioEntry(newServer(t, serverOpts{}))})
	res := g.run(t, "-m", "gemini-interop-model", "-o", "json", "--prompt=hello from an untrusted setup")
	if res.code != 0 {
		t.Fatalf("gemini: exit %d\nstdout: %s\nstderr: %s", res.code, clip(res.stdout, 4000), clip(res.stderr, 8000))
	}
	for _, r := range g.api.Requests() {
		if r.Method != fakeapi.MethodStream {
			continue
		}
		for _, tool := range r.Tools {
			if strings.HasPrefix(tool, "mcp_gemini_") {
				t.Errorf("the CLI offered %s from an untrusted server without --yolo; offered: %v", tool, r.Tools)
			}
		}
		if !slices.Contains(r.Tools, "read_file") {
			t.Errorf("the request offers no built-in tools either, so it proves nothing: %v", r.Tools)
		}
	}
}

// TestGeminiCLICallsChat has the fake Gemini API, as the model, call this
// server's chat tool through the real Gemini CLI: the CLI must offer the
// tool to the model, run it on the server (which runs the fake Gemini CLI)
// when the model calls it, and send its result back to the model. Over
// stdio and Streamable HTTP.
func TestGeminiCLICallsChat(t *testing.T) {
	cli := fakeapi.RealCLI(t)
	if serverBin == "" {
		t.Fatal("the server binary was not built")
	}
	t.Parallel()
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			t.Parallel()
			g := newGeminiHome(t, cli)
			var s *server
			// The server is named "gemini", as in the README; its tools
			// reach the model as mcp_gemini_<tool>. "trust" lets the
			// headless CLI run them without a confirmation.
			if transport == "stdio" {
				s = newServer(t, serverOpts{})
				entry := stdioEntry(s)
				entry["trust"] = true
				g.setServers(t, map[string]any{"gemini": entry})
			} else {
				s = newServer(t, serverOpts{http: true, tokens: []string{testToken}})
				g.setServers(t, map[string]any{"gemini": map[string]any{
					"url": s.base + "/mcp", "type": "http", "headers": map[string]any{"Authorization": "Bearer " + testToken}, "trust": true,
				}})
			}
			const tool = "mcp_gemini_chat"
			inner := "interop: the Gemini CLI asks gemini-mcp-server over " + transport
			// The model tunes its call, as the schema allows.
			args, _ := json.Marshal(map[string]any{"prompt": inner, "temperature": 0.5, "thinking_mode": "low"})
			res := g.run(t, "-m", "gemini-interop-model", "-o", "json",
				"--prompt=Ask the other Gemini. [[call:"+tool+":"+string(args)+"]]")
			if res.code != 0 {
				t.Fatalf("gemini: exit %d\nstdout: %s\nstderr: %s", res.code, clip(res.stdout, 4000), clip(res.stderr, 8000))
			}
			checkToolRoundTrip(t, g.api.Requests(), tool, inner, res.stdout)
			checkTuningOffered(t, g.api.Requests(), tool)

			// The server ran the fake CLI once, with the model's prompt.
			var n int
			for _, inv := range s.invocations(t) {
				if inv.Prompt == inner {
					n++
				}
				if alive(inv.Pid) {
					t.Errorf("the fake CLI (pid %d) is still running", inv.Pid)
				}
			}
			if n != 1 {
				t.Errorf("the fake CLI ran %d times with %q, want 1: %+v", n, inner, s.invocations(t))
			}
		})
	}
}

// checkToolRoundTrip checks the fake API's requests for one tool round
// trip: the tool offered, the model's call answered with our chat's
// deterministic answer, and that answer in the CLI's final output.
func checkToolRoundTrip(t *testing.T, reqs []fakeapi.Request, tool, inner, stdout string) {
	t.Helper()
	want := wantAnswer(inner)
	var called, answered bool
	for i, r := range reqs {
		if r.Method != fakeapi.MethodStream {
			continue
		}
		if !slices.Contains(r.Tools, tool) {
			t.Errorf("request %d does not offer %s; it offers %v", i, tool, r.Tools)
		}
		if r.FunctionCall != nil {
			t.Logf("request %d: the model called %s%s; the CLI offered %v", i, r.FunctionCall.Name, r.FunctionCall.Args, r.Tools)
			called = called || r.FunctionCall.Name == tool
		}
		for _, fr := range r.FunctionResponses {
			t.Logf("request %d: functionResponse from %s: %s", i, fr.Name, clip(string(fr.Response), 600))
			if fr.Name == tool && jsonHoldsString(fr.Response, want) {
				answered = true
			}
		}
	}
	if !called {
		t.Errorf("the model never called %s", tool)
	}
	if !answered {
		t.Errorf("no request carried a functionResponse from %s holding %q", tool, want)
	}
	var out struct{ Response string }
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("gemini's JSON output: %v\n%s", err, clip(stdout, 4000))
	}
	if !strings.Contains(out.Response, want) || !strings.Contains(out.Response, tool+" returned") {
		t.Errorf("gemini's final answer does not relay the tool's result %q:\n%s", want, out.Response)
	}
}

// jsonHoldsString reports whether some string in the JSON document raw
// contains s.
func jsonHoldsString(raw []byte, s string) bool {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	if d.Decode(&v) != nil {
		return false
	}
	var walk func(any) bool
	walk = func(v any) bool {
		switch v := v.(type) {
		case string:
			return strings.Contains(v, s)
		case []any:
			return slices.ContainsFunc(v, walk)
		case map[string]any:
			for _, e := range v {
				if walk(e) {
					return true
				}
			}
		}
		return false
	}
	return walk(v)
}

// checkTuningOffered checks that the CLI offers the model chat's tuning
// arguments with their constraints as the server declares them: the CLI
// passes a tool's schema to the API as parametersJsonSchema, and a
// constraint it dropped would let the model send values the server
// refuses.
func checkTuningOffered(t *testing.T, reqs []fakeapi.Request, tool string) {
	t.Helper()
	type prop struct {
		Type    string   `json:"type"`
		Minimum *float64 `json:"minimum"`
		Maximum *float64 `json:"maximum"`
		Enum    []string `json:"enum"`
	}
	for _, r := range reqs {
		var body struct {
			Tools []struct {
				FunctionDeclarations []struct {
					Name   string `json:"name"`
					Schema struct {
						Properties map[string]prop `json:"properties"`
					} `json:"parametersJsonSchema"`
				} `json:"functionDeclarations"`
			} `json:"tools"`
		}
		if r.Method != fakeapi.MethodStream || json.Unmarshal(r.Body, &body) != nil {
			continue
		}
		for _, tl := range body.Tools {
			for _, fd := range tl.FunctionDeclarations {
				if fd.Name != tool {
					continue
				}
				temp, mode := fd.Schema.Properties["temperature"], fd.Schema.Properties["thinking_mode"]
				if temp.Type != "number" || temp.Minimum == nil || *temp.Minimum != 0 || temp.Maximum == nil || *temp.Maximum != 2 ||
					mode.Type != "string" || strings.Join(mode.Enum, ",") != strings.Join(backend.ThinkingModes, ",") {
					t.Errorf("the CLI offers %s with temperature %+v and thinking_mode %+v", tool, temp, mode)
				}
				return
			}
		}
	}
	t.Errorf("no request declares %s with a parametersJsonSchema", tool)
}

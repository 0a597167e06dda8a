package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var expertTools = []string{"thinkdeep", "analyze", "codereview", "debug", "precommit"}

// checkServed checks that cs lists exactly the tools and prompts given,
// and that a call of notServed gets the SDK's unknown-tool error.
func checkServed(t *testing.T, cs *mcp.ClientSession, tools, prompts []string, notServed string) {
	t.Helper()
	ctx := context.Background()
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range lt.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Equal(slices.Sorted(slices.Values(names)), slices.Sorted(slices.Values(tools))) {
		t.Errorf("tools %v, want %v", names, tools)
	}
	var promptNames []string
	if cs.InitializeResult().Capabilities.Prompts != nil {
		lp, err := cs.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range lp.Prompts {
			promptNames = append(promptNames, p.Name)
		}
	}
	if !slices.Equal(slices.Sorted(slices.Values(promptNames)), slices.Sorted(slices.Values(prompts))) {
		t.Errorf("prompts %v, want %v", promptNames, prompts)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: notServed, Arguments: map[string]any{"prompt": "hello", "files": []string{"a.go"}}})
	if err == nil || !strings.Contains(err.Error(), `unknown tool "`+notServed+`"`) {
		t.Errorf("%s, not served: %v %+v", notServed, err, res)
	}
}

func TestToolsStdio(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cs := connect(t, e.command("--tools", "chat", "--max-prompt-bytes", "1000"))
	checkServed(t, cs, []string{"chat", "chat-reply", "chat-page", "job"}, nil, "analyze")
	// An argument over --max-prompt-bytes, which the server refuses from
	// its size before the SDK decodes it, of a tool not served: still the
	// SDK's unknown tool, not the tool's own refusal.
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "debug", Arguments: map[string]any{"error_description": strings.Repeat("x", 5000)}})
	if err == nil || !strings.Contains(err.Error(), `unknown tool "debug"`) {
		t.Errorf("oversized call of a tool not served: %v", err)
	}
	// The tools served work.
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "chat", Arguments: map[string]any{"prompt": "hello"}})
	if err != nil || res.IsError {
		t.Fatalf("chat: %v %+v", err, res)
	}

	cmd := e.command()
	cmd.Env = append(cmd.Env, "GEMINI_MCP_TOOLS=expert, sessions")
	cs = connect(t, cmd)
	checkServed(t, cs, append([]string{"chat-page", "sessions", "job"}, expertTools...), expertTools, "chat")
}

func TestToolsHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct {
		value          string
		tools, prompts []string
		notServed      string
	}{
		{"chat", []string{"chat", "chat-reply", "chat-page", "job"}, nil, "sessions"},
		{"expert,sessions", append([]string{"chat-page", "sessions", "job"}, expertTools...), expertTools, "chat-reply"},
		{"analyze", []string{"chat-page", "job", "analyze"}, []string{"analyze"}, "debug"},
	} {
		addr, _ := startHTTP(t, e, "--tools", c.value)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "tools-http", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(c.value, func(t *testing.T) { checkServed(t, cs, c.tools, c.prompts, c.notServed) })
		cs.Close()
	}
}

// TestToolsDoctor: doctor names the tools served.
func TestToolsDoctor(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	out, _ := e.command("doctor", "--tools", "analyze").CombinedOutput()
	if !strings.Contains(string(out), "ok    tools served (--tools analyze): chat-page, job, analyze\n") {
		t.Fatalf("doctor:\n%s", out)
	}
}

// TestToolsBadValues: an unknown name, or a rate limit on a tool not
// served, stops the server at start-up as a bad flag does.
func TestToolsBadValues(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--tools", "chat,experts"}, "", `--tools: there is no tool or set of tools "experts": the names are all, chat, sessions, expert, chat-reply, chat-page, job, image, research, thinkdeep, analyze, codereview, debug, precommit`},
		{nil, "GEMINI_MCP_TOOLS=analyse", `"analyse"`},
		{[]string{"--tools", ","}, "", "--tools: names no tool"},
		{[]string{"--tools", "expert", "--rate-limits", "chat=1/min"}, "", `--rate-limits: the tool "chat" is not served (see --tools): the tools served are chat-page, job, thinkdeep, analyze, codereview, debug, precommit`},
	} {
		cmd := e.command(c.args...)
		if c.env != "" {
			cmd.Env = append(cmd.Env, c.env)
		}
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), c.want) {
			t.Errorf("%q %s: exit %d %s; want exit 2 and %q", c.args, c.env, cmd.ProcessState.ExitCode(), out, c.want)
		}
	}
}

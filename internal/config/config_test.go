package config

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDefaults(t *testing.T) {
	c, err := Parse("x", "", nil, envOf(nil), io.Discard, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Gemini != "gemini" || c.Model != "" || c.Timeout != DefaultTimeout || c.MaxPromptBytes != DefaultMaxPromptBytes ||
		c.ApprovalMode != "" || c.Sandbox || c.SkipTrust || c.IncludeDirectories != nil {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestEnvAndFlagPrecedence(t *testing.T) {
	env := envOf(map[string]string{
		"GEMINI_MCP_GEMINI":              "/opt/gemini",
		"GEMINI_MCP_APPROVAL_MODE":       "plan",
		"GEMINI_MCP_SANDBOX":             "true",
		"GEMINI_MCP_INCLUDE_DIRECTORIES": "/a, /b",
		"GEMINI_MCP_EXTENSIONS":          "none",
		"GEMINI_MCP_TIMEOUT":             "90",
		"GEMINI_MCP_MAX_PROMPT_BYTES":    "2MiB",
		"GEMINI_MCP_LOG_LEVEL":           "debug",
	})
	c, err := Parse("x", "", nil, env, io.Discard, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Gemini != "/opt/gemini" || c.ApprovalMode != "plan" || !c.Sandbox || c.Timeout != 90*time.Second ||
		c.MaxPromptBytes != 2<<20 || !reflect.DeepEqual(c.IncludeDirectories, []string{"/a", "/b"}) ||
		!reflect.DeepEqual(c.Extensions, []string{"none"}) || c.LogLevel.String() != "DEBUG" {
		t.Fatalf("from env: %+v", c)
	}
	c, err = Parse("x", "", []string{"--gemini", "/usr/bin/gemini", "--approval-mode=yolo", "--sandbox=false",
		"--include-directories", "/c", "--include-directories=/d,/e", "--timeout", "10m"}, env, io.Discard, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Gemini != "/usr/bin/gemini" || c.ApprovalMode != "yolo" || c.Sandbox || c.Timeout != 10*time.Minute ||
		!reflect.DeepEqual(c.IncludeDirectories, []string{"/c", "/d", "/e"}) {
		t.Fatalf("flags over env: %+v", c)
	}
}

func TestInvalid(t *testing.T) {
	cases := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--approval-mode", "always"}, nil, "approval-mode"},
		{nil, map[string]string{"GEMINI_MCP_SANDBOX": "maybe"}, "GEMINI_MCP_SANDBOX"},
		{nil, map[string]string{"GEMINI_MCP_TIMEOUT": "soon"}, "GEMINI_MCP_TIMEOUT"},
		{[]string{"--max-prompt-bytes", "0"}, nil, "max-prompt-bytes"},
		{[]string{"--include-directories", "--evil"}, nil, "include-directories"},
		{[]string{"--log-level", "loud"}, nil, "log-level"},
		{[]string{"--model", "-x"}, nil, "--model"},
		{nil, map[string]string{"GEMINI_MCP_MAX_CONCURRENT": "0"}, "max-concurrent"},
		{nil, map[string]string{"GEMINI_MCP_TOKENS": "short"}, "16 characters"},
		{nil, map[string]string{"GEMINI_MCP_TOKENS": " , "}, "GEMINI_MCP_TOKENS holds no token"},
		{nil, map[string]string{"GEMINI_MCP_TOKENS": ",,"}, "GEMINI_MCP_TOKENS holds no token"},
		{[]string{"--max-sessions", "0"}, nil, "--max-sessions"},
		{[]string{"--body-read-timeout", "0"}, nil, "--body-read-timeout"},
		{[]string{"stray"}, nil, "unexpected argument"},
		{[]string{"--no-such-flag"}, nil, "no-such-flag"},
		{[]string{"--max-tool-rounds", "0"}, nil, "--max-tool-rounds"},
		{nil, map[string]string{"GEMINI_MCP_MAX_TOOL_ROUNDS": "many"}, "GEMINI_MCP_MAX_TOOL_ROUNDS"},
		{[]string{"--allow-mcp-tools", "db.query,.x"}, nil, "--allow-mcp-tools"},
	}
	for _, c := range cases {
		var out strings.Builder
		_, err := Parse("x", "", c.args, envOf(c.env), &out, Rules{})
		if err == nil || !strings.Contains(err.Error()+out.String(), c.want) {
			t.Errorf("Parse(%q, %v) = %v (output %q), want an error about %q", c.args, c.env, err, out.String(), c.want)
		}
	}
}

func TestHelp(t *testing.T) {
	var out strings.Builder
	_, err := Parse("x", "HEADER\n", []string{"--help"}, envOf(nil), &out, Rules{})
	if !errors.Is(err, ErrHelp) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"HEADER", "-approval-mode", "GEMINI_MCP_TIMEOUT", "-state-dir", "-skip-trust", "-send-secret-files", "GEMINI_MCP_SEND_SECRET_FILES"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

func TestForeignBackendVariableIsIgnored(t *testing.T) {
	c, err := Parse("x", "", nil, envOf(map[string]string{"GEMINI_MCP_BACKEND": "gemini"}), io.Discard, Rules{})
	if err != nil || c.Backend != "auto" || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "gemini-mcp-tool") {
		t.Fatalf("%v %+v", err, c)
	}
	c, err = Parse("x", "", nil, envOf(map[string]string{"GEMINI_MCP_BACKEND": "oneshot"}), io.Discard, Rules{})
	if err != nil || c.Backend != "oneshot" || len(c.Warnings) != 0 {
		t.Fatalf("%v %+v", err, c)
	}
	for _, b := range []string{"auto", "warm", "oneshot", "api"} {
		if c, err := Parse("x", "", []string{"--backend", b}, envOf(nil), io.Discard, Rules{}); err != nil || c.Backend != b {
			t.Fatalf("--backend %s: %v", b, err)
		}
	}
	if _, err := Parse("x", "", []string{"--backend", "gemini"}, envOf(nil), io.Discard, Rules{}); err == nil {
		t.Fatal("a bad --backend flag was accepted")
	}
}

// TestMaxBodyBytesFitsEscapedPrompts: the default body cap holds a prompt
// and a system prompt of --max-prompt-bytes control characters, escaped
// six times over by JSON; a smaller explicit cap is kept, with a warning.
func TestMaxBodyBytesFitsEscapedPrompts(t *testing.T) {
	c, err := Parse("x", "", nil, envOf(nil), io.Discard, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if want := 12*DefaultMaxPromptBytes + 64<<10; c.MaxBodyBytes != want {
		t.Fatalf("default --max-body-bytes %d, want %d", c.MaxBodyBytes, want)
	}
	c, err = Parse("x", "", []string{"--max-body-bytes", "4MiB"}, envOf(nil), io.Discard, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxBodyBytes != 4<<20 || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "--max-body-bytes") {
		t.Fatalf("explicit 4 MiB: %d %q", c.MaxBodyBytes, c.Warnings)
	}
}

func TestToolHostFlags(t *testing.T) {
	c, err := Parse("x", "", nil, envOf(map[string]string{"GEMINI_MCP_ALLOW_MCP_TOOLS": "db, github.create_issue", "GEMINI_MCP_MAX_TOOL_ROUNDS": "3"}), io.Discard, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxToolRounds != 3 || !reflect.DeepEqual(c.AllowMCPTools, []string{"db", "github.create_issue"}) {
		t.Fatalf("from env: %d %q", c.MaxToolRounds, c.AllowMCPTools)
	}
	c, err = Parse("x", "", []string{"--max-tool-rounds=4", "--allow-mcp-tools", "web"}, envOf(nil), io.Discard, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxToolRounds != 4 || !reflect.DeepEqual(c.AllowMCPTools, []string{"web"}) {
		t.Fatalf("from flags: %d %q", c.MaxToolRounds, c.AllowMCPTools)
	}
	if c, _ = Parse("x", "", nil, envOf(nil), io.Discard, Rules{}); c.MaxToolRounds != DefaultMaxToolRounds || c.AllowMCPTools != nil {
		t.Fatalf("defaults: %d %q", c.MaxToolRounds, c.AllowMCPTools)
	}
}

func TestSendSecretFiles(t *testing.T) {
	for _, c := range []struct {
		args []string
		env  map[string]string
		want bool
	}{
		{nil, nil, false},
		{[]string{"--send-secret-files"}, nil, true},
		{nil, map[string]string{"GEMINI_MCP_SEND_SECRET_FILES": "true"}, true},
		{[]string{"--send-secret-files=false"}, map[string]string{"GEMINI_MCP_SEND_SECRET_FILES": "1"}, false},
	} {
		cfg, err := Parse("x", "", c.args, envOf(c.env), io.Discard, Rules{})
		if err != nil || cfg.SendSecretFiles != c.want {
			t.Errorf("%v %v: %v, %v", c.args, c.env, cfg, err)
		}
	}
}

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
	if c.CLI.Gemini != "gemini" || c.Turns.Model != "" || c.Turns.Timeout != DefaultTimeout || c.Tools.MaxPromptBytes != DefaultMaxPromptBytes ||
		c.CLI.ApprovalMode != "" || c.CLI.Sandbox || c.CLI.SkipTrust || c.CLI.IncludeDirectories != nil {
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
	if c.CLI.Gemini != "/opt/gemini" || c.CLI.ApprovalMode != "plan" || !c.CLI.Sandbox || c.Turns.Timeout != 90*time.Second ||
		c.Tools.MaxPromptBytes != 2<<20 || !reflect.DeepEqual(c.CLI.IncludeDirectories, []string{"/a", "/b"}) ||
		!reflect.DeepEqual(c.CLI.Extensions, []string{"none"}) || c.LogLevel.String() != "DEBUG" {
		t.Fatalf("from env: %+v", c)
	}
	c, err = Parse("x", "", []string{"--gemini", "/usr/bin/gemini", "--approval-mode=yolo", "--sandbox=false",
		"--include-directories", "/c", "--include-directories=/d,/e", "--timeout", "10m"}, env, io.Discard, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if c.CLI.Gemini != "/usr/bin/gemini" || c.CLI.ApprovalMode != "yolo" || c.CLI.Sandbox || c.Turns.Timeout != 10*time.Minute ||
		!reflect.DeepEqual(c.CLI.IncludeDirectories, []string{"/c", "/d", "/e"}) {
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
		{[]string{"--mcp-client-metadata-url", "http://example.com/client.json"}, nil, "must be an https:// URL with a path"},
		{nil, map[string]string{"GEMINI_MCP_CLIENT_METADATA_URL": "https://example.com/"}, "must be an https:// URL with a path"},
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
		{[]string{"--fallback-model=-x"}, nil, "--fallback-model: invalid model"},
		{nil, map[string]string{"GEMINI_MCP_FALLBACK_MODEL": "-x"}, "--fallback-model: invalid model"},
		{[]string{"--rate-limits", "chats=1/min"}, nil, `--rate-limits: there is no tool "chats": the tools are chat, analyze`},
		{nil, map[string]string{"GEMINI_MCP_RATE_LIMITS": "chat=1/year"}, "GEMINI_MCP_RATE_LIMITS: --rate-limits: chat:"},
	}
	// The rules of packages config does not import, as the app gives them.
	rules := Rules{
		Model: func(m string) error {
			if strings.HasPrefix(m, "-") {
				return errors.New("invalid model")
			}
			return nil
		},
		RateLimitTools: []string{"chat", "analyze"},
	}
	for _, c := range cases {
		var out strings.Builder
		_, err := Parse("x", "", c.args, envOf(c.env), &out, rules)
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
	for _, want := range []string{"HEADER", "-approval-mode", "GEMINI_MCP_TIMEOUT", "-state-dir", "-skip-trust", "-send-secret-files", "GEMINI_MCP_SEND_SECRET_FILES", "-fallback-model", "GEMINI_MCP_FALLBACK_MODEL", "the api backend uses flash"} {
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
	for _, b := range []Backend{BackendAuto, BackendWarm, BackendOneshot, BackendAPI} {
		if c, err := Parse("x", "", []string{"--backend", string(b)}, envOf(nil), io.Discard, Rules{}); err != nil || c.Backend != b {
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
	if want := 12*DefaultMaxPromptBytes + 64<<10; c.HTTP.MaxBodyBytes != want {
		t.Fatalf("default --max-body-bytes %d, want %d", c.HTTP.MaxBodyBytes, want)
	}
	c, err = Parse("x", "", []string{"--max-body-bytes", "4MiB"}, envOf(nil), io.Discard, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if c.HTTP.MaxBodyBytes != 4<<20 || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "--max-body-bytes") {
		t.Fatalf("explicit 4 MiB: %d %q", c.HTTP.MaxBodyBytes, c.Warnings)
	}
}

func TestToolHostFlags(t *testing.T) {
	c, err := Parse("x", "", nil, envOf(map[string]string{"GEMINI_MCP_ALLOW_MCP_TOOLS": "db, github.create_issue", "GEMINI_MCP_MAX_TOOL_ROUNDS": "3"}), io.Discard, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if c.API.MaxToolRounds != 3 || !reflect.DeepEqual(c.API.AllowMCPTools, []string{"db", "github.create_issue"}) {
		t.Fatalf("from env: %d %q", c.API.MaxToolRounds, c.API.AllowMCPTools)
	}
	c, err = Parse("x", "", []string{"--max-tool-rounds=4", "--allow-mcp-tools", "web"}, envOf(nil), io.Discard, Rules{})
	if err != nil {
		t.Fatal(err)
	}
	if c.API.MaxToolRounds != 4 || !reflect.DeepEqual(c.API.AllowMCPTools, []string{"web"}) {
		t.Fatalf("from flags: %d %q", c.API.MaxToolRounds, c.API.AllowMCPTools)
	}
	if c, _ = Parse("x", "", nil, envOf(nil), io.Discard, Rules{}); c.API.MaxToolRounds != DefaultMaxToolRounds || c.API.AllowMCPTools != nil {
		t.Fatalf("defaults: %d %q", c.API.MaxToolRounds, c.API.AllowMCPTools)
	}
}

func TestFallbackModelFlag(t *testing.T) {
	c, err := Parse("x", "", nil, envOf(map[string]string{"GEMINI_MCP_FALLBACK_MODEL": "flash"}), io.Discard, Rules{})
	if err != nil || c.API.FallbackModel != "flash" {
		t.Fatalf("from env: %q, %v", c.API.FallbackModel, err)
	}
	c, err = Parse("x", "", []string{"--fallback-model", "gemini-2.5-flash-lite"}, envOf(map[string]string{"GEMINI_MCP_FALLBACK_MODEL": "flash"}), io.Discard, Rules{})
	if err != nil || c.API.FallbackModel != "gemini-2.5-flash-lite" {
		t.Fatalf("the flag over the variable: %q, %v", c.API.FallbackModel, err)
	}
	if c, _ = Parse("x", "", nil, envOf(nil), io.Discard, Rules{}); c.API.FallbackModel != "" {
		t.Fatalf("default: %q", c.API.FallbackModel)
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
		if err != nil || cfg.Expert.SendSecretFiles != c.want {
			t.Errorf("%v %v: %v, %v", c.args, c.env, cfg, err)
		}
	}
}

package cli

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
)

func TestArgs(t *testing.T) {
	r := NewRunner(Options{}, nil)
	got := r.args(backend.Turn{Prompt: "-h hello", Model: "gemini-x"}, "11111111-2222-4333-8444-555555555555")
	want := []string{"-m", "gemini-x", "--session-id", "11111111-2222-4333-8444-555555555555", "--output-format", "json", "--prompt=-h hello"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("new session:\n got %q\nwant %q", got, want)
	}
	got = r.args(backend.Turn{Prompt: "mcp", Session: "latest"}, "ignored-when-resuming")
	want = []string{"-r", "latest", "--output-format", "json", "--prompt=mcp"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("resume:\n got %q\nwant %q", got, want)
	}
}

func TestArgsOperatorOptions(t *testing.T) {
	r := NewRunner(Options{ApprovalMode: "plan", Sandbox: true, SkipTrust: true,
		IncludeDirectories: []string{"/a", "/b c"}, Extensions: []string{"none"}, AllowedMCPServerNames: []string{"x"}}, nil)
	got := r.args(backend.Turn{Prompt: "p"}, "")
	want := []string{"--output-format", "json", "--approval-mode=plan", "--sandbox", "--skip-trust",
		"--include-directories=/a", "--include-directories=/b c", "--extensions=none", "--allowed-mcp-server-names=x", "--prompt=p"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("\n got %q\nwant %q", got, want)
	}
}

func TestArgsLargePromptGoesToStdin(t *testing.T) {
	r := NewRunner(Options{}, nil)
	big := strings.Repeat("x", ArgPromptMax+1)
	for _, a := range r.args(backend.Turn{Prompt: big}, "") {
		if strings.HasPrefix(a, "--prompt") {
			t.Fatalf("a %d-byte prompt went into argv", len(big))
		}
	}
	exact := strings.Repeat("x", ArgPromptMax)
	if a := r.args(backend.Turn{Prompt: exact}, ""); a[len(a)-1] != "--prompt="+exact {
		t.Fatal("a prompt at the limit should stay in argv")
	}
}

func TestRedactPrompt(t *testing.T) {
	got := redactPrompt([]string{"-m", "x", "--prompt=secret words"})
	if got[2] != "--prompt=<12 bytes>" {
		t.Fatalf("got %q", got)
	}
}

package cli

import (
	"reflect"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
)

func TestArgs(t *testing.T) {
	t.Parallel()
	r := NewRunner(geminicli.Options{}, nil)
	got := r.args(backend.Turn{Prompt: "-h hello", Model: "gemini-x"}, "11111111-2222-4333-8444-555555555555")
	want := []string{"-m", "gemini-x", "--session-id", "11111111-2222-4333-8444-555555555555", "--output-format", "json"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("new session:\n got %q\nwant %q", got, want)
	}
	got = r.args(backend.Turn{Prompt: "mcp", Session: "latest"}, "ignored-when-resuming")
	want = []string{"-r", "latest", "--output-format", "json"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("resume:\n got %q\nwant %q", got, want)
	}
}

func TestArgsOperatorOptions(t *testing.T) {
	t.Parallel()
	r := NewRunner(geminicli.Options{ApprovalMode: "plan", Sandbox: true, SkipTrust: true,
		IncludeDirectories: []string{"/a", "/b c"}, Extensions: []string{"none"}, AllowedMCPServerNames: []string{"x"}}, nil)
	got := r.args(backend.Turn{Prompt: "p"}, "")
	want := []string{"--output-format", "json", "--approval-mode=plan", "--sandbox", "--skip-trust",
		"--include-directories=/a", "--include-directories=/b c", "--extensions=none", "--allowed-mcp-server-names=x"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("\n got %q\nwant %q", got, want)
	}
}

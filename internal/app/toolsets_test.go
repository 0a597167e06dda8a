package app

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolsetSizes lists the tools and prompts each --tools value serves
// and logs the size of tools/list's and prompts/list's results, as JSON,
// which docs/configuration.md's table gives (go test -v -run
// TestToolsetSizes ./internal/app).
func TestToolsetSizes(t *testing.T) {
	t.Parallel()
	experts := []string{"thinkdeep", "analyze", "codereview", "debug", "precommit"}
	all := append([]string{"chat", "chat-reply", "chat-page", "sessions", "job", "image", "research"}, experts...)
	var table strings.Builder
	fmt.Fprintln(&table, "| value of `--tools` | tools | tools/list bytes | prompts | prompts/list bytes |")
	for _, c := range []struct {
		value          string
		tools, prompts []string
	}{
		{"all", all, experts},
		{"chat", []string{"chat", "chat-reply", "chat-page", "job"}, nil},
		{"expert", append([]string{"chat-page", "job"}, experts...), experts},
		{"sessions", []string{"sessions"}, nil},
		{"expert,sessions", append([]string{"chat-page", "sessions", "job"}, experts...), experts},
		{"analyze", []string{"chat-page", "job", "analyze"}, []string{"analyze"}},
		{"image", []string{"image"}, nil},
		{"research", []string{"research", "job", "chat-page"}, nil},
	} {
		tools, prompts, _ := listedWith(t, "--tools", c.value)
		var toolNames, promptNames []string
		for _, tool := range tools.Tools {
			toolNames = append(toolNames, tool.Name)
		}
		for _, p := range prompts.Prompts {
			promptNames = append(promptNames, p.Name)
		}
		if !slices.Equal(sorted(toolNames), sorted(c.tools)) || !slices.Equal(sorted(promptNames), sorted(c.prompts)) {
			t.Errorf("--tools %s: tools %v, prompts %v; want %v and %v", c.value, toolNames, promptNames, c.tools, c.prompts)
		}
		fmt.Fprintf(&table, "| `%s` | %d | %d | %d | %d |\n", c.value, len(toolNames), size(t, tools), len(promptNames), size(t, prompts))
	}
	t.Log("\n" + table.String())
}

func size(t *testing.T, v any) int {
	t.Helper()
	if p, ok := v.(*mcp.ListPromptsResult); ok && len(p.Prompts) == 0 {
		return 0
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return len(b)
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

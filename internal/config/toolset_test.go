package config

import (
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

// toolsetRules are rules whose --tools knows two sets, as the server's
// registry gives them to the app.
func toolsetRules() Rules {
	return Rules{
		RateLimitTools: []string{"chat", "chat-page", "sessions", "analyze", "debug"},
		Toolset: func(s string) ([]string, error) {
			switch s {
			case "all":
				return []string{"chat", "chat-page", "sessions", "analyze", "debug"}, nil
			case "analyze":
				return []string{"chat-page", "analyze"}, nil
			}
			return nil, io.ErrUnexpectedEOF
		},
	}
}

func TestToolsFlag(t *testing.T) {
	c, err := Parse("x", "", nil, envOf(nil), io.Discard, toolsetRules())
	if err != nil || c.Tools.Toolset != "all" || len(c.Tools.Served) != 5 {
		t.Fatalf("default: %v %q %v", err, c.Tools.Toolset, c.Tools.Served)
	}
	for _, args := range [][]string{{"--tools", "analyze"}, nil} {
		c, err := Parse("x", "", args, envOf(map[string]string{"GEMINI_MCP_TOOLS": "analyze"}), io.Discard, toolsetRules())
		if err != nil || !slices.Equal(c.Tools.Served, []string{"chat-page", "analyze"}) {
			t.Fatalf("%q: %v %v", args, err, c)
		}
	}
	if _, err := Parse("x", "", []string{"--tools", "nothing"}, envOf(nil), io.Discard, toolsetRules()); err == nil || !strings.HasPrefix(err.Error(), "--tools: ") {
		t.Fatalf("unknown: %v", err)
	}
}

// TestRateLimitsOfToolsNotServed: --rate-limits may not name a tool
// --tools does not serve; "recommended" limits only the tools served.
func TestRateLimitsOfToolsNotServed(t *testing.T) {
	_, err := Parse("x", "", []string{"--tools", "analyze", "--rate-limits", "analyze=2/min,chat=1/min"}, envOf(nil), io.Discard, toolsetRules())
	if err == nil || !strings.Contains(err.Error(), `--rate-limits: the tool "chat" is not served (see --tools): the tools served are chat-page, analyze`) {
		t.Fatalf("chat not served: %v", err)
	}
	c, err := Parse("x", "", []string{"--rate-limits", "recommended,analyze=2/min"}, envOf(map[string]string{"GEMINI_MCP_TOOLS": "analyze"}), io.Discard, toolsetRules())
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]Rate{"analyze": {2, time.Minute}}; !maps.Equal(c.Tools.RateLimits.Limits, want) {
		t.Fatalf("limits %v, want %v", c.Tools.RateLimits.Limits, want)
	}
	c, err = Parse("x", "", []string{"--rate-limits", "recommended"}, envOf(nil), io.Discard, toolsetRules())
	if err != nil || len(c.Tools.RateLimits.Limits) != len(RecommendedRateLimits()) {
		t.Fatalf("all tools served: %v %v", err, c.Tools.RateLimits.Limits)
	}
}

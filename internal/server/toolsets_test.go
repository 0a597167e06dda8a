package server

import (
	"slices"
	"strings"
	"testing"
)

func TestParseToolset(t *testing.T) {
	experts := []string{"thinkdeep", "analyze", "codereview", "debug", "precommit"}
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"all", ToolNames()},
		{"chat", []string{"chat", "chat-reply", "chat-page", "job"}},
		{"sessions", []string{"sessions"}},
		{"expert", append([]string{"chat-page", "job"}, experts...)},
		{"expert,sessions", append([]string{"chat-page", "sessions", "job"}, experts...)},
		// A single expert tool brings chat-page, which reads its pages,
		// and job, which reads its background jobs.
		{"analyze", []string{"chat-page", "job", "analyze"}},
		{"chat-reply", []string{"chat-reply", "chat-page", "job"}},
		{"chat-page", []string{"chat-page"}},
		{"job", []string{"job"}},
		// research's reports are read with job, a long one's pages with
		// chat-page.
		{"research", []string{"chat-page", "job", "research"}},
		// Duplicates, whitespace and empty entries; the registry's order.
		{" precommit , chat ,, precommit,analyze ", []string{"chat", "chat-reply", "chat-page", "job", "analyze", "precommit"}},
		{"chat,all", ToolNames()},
		{"sessions,sessions", []string{"sessions"}},
	} {
		got, err := ParseToolset(c.in)
		if err != nil {
			t.Errorf("ParseToolset(%q): %v", c.in, err)
			continue
		}
		if !slices.Equal(sorted(got), sorted(c.want)) {
			t.Errorf("ParseToolset(%q) = %v, want %v", c.in, got, c.want)
		}
		if !slices.Equal(got, namesOf(func(t Tool) bool { return slices.Contains(got, t.Name) })) {
			t.Errorf("ParseToolset(%q) = %v: not in the registry's order", c.in, got)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"", "names no tool"},
		{" , ,", "names no tool"},
		{"chat,experts", `there is no tool or set of tools "experts": the names are all, chat, sessions, expert, chat-reply, chat-page, job, image, research, thinkdeep, analyze, codereview, debug, precommit`},
		{"Chat", `"Chat"`},
	} {
		got, err := ParseToolset(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseToolset(%q) = %v, %v; want an error about %q", c.in, got, err, c.want)
		}
	}
}

// TestInstructionsNameServedTools: the instructions name only the tools
// served, and every tool by default.
func TestInstructionsNameServedTools(t *testing.T) {
	all := instructions(Families{})
	for _, name := range ToolNames() {
		if name != "chat-page" && !strings.Contains(all, name) {
			t.Errorf("instructions lack %s: %s", name, all)
		}
	}
	only := instructions(Families{Serve: []string{"chat-page", "analyze"}})
	if !strings.Contains(only, "analyze brings project files") || strings.Contains(only, "chat-reply") || strings.Contains(only, "sessions") || strings.Contains(only, "debug") {
		t.Errorf("analyze's instructions: %s", only)
	}
	chat := instructions(Families{Serve: []string{"chat", "chat-reply", "chat-page"}})
	if !strings.Contains(chat, "Call chat to start") || strings.Contains(chat, "continuation_id") || strings.Contains(chat, "sessions") {
		t.Errorf("chat's instructions: %s", chat)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

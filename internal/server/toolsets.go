package server

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
)

type toolSet struct {
	name  string
	tools func() []string
}

// toolSets are the names --tools takes for several tools at once, besides
// each tool's own name.
var toolSets = []toolSet{
	{config.DefaultToolset, ToolNames},
	{"chat", func() []string { return []string{"chat", "chat-reply", "chat-page"} }},
	{"sessions", func() []string { return []string{"sessions"} }},
	{"expert", RPCErrorTools},
}

// pager is the tool that reads the pages of a long answer: a set that
// serves a tool whose answers may come in pages serves it too. jobber is
// the tool that reports on background jobs, served with the same tools,
// which all take background.
const (
	pager  = "chat-page"
	jobber = "job"
)

// ToolsetNames are the names --tools takes: the sets, then the tools
// that are not also a set's name.
func ToolsetNames() []string {
	var names []string
	for _, s := range toolSets {
		names = append(names, s.name)
	}
	for _, t := range ToolNames() {
		if !slices.Contains(names, t) {
			names = append(names, t)
		}
	}
	return names
}

// ParseToolset reads the value of --tools: a comma-separated list of set
// and tool names. It returns the tools to serve in the registry's order,
// chat-page and job added when a tool that pages its answers (and runs
// in the background) is served.
func ParseToolset(s string) ([]string, error) {
	want := map[string]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		i := slices.IndexFunc(toolSets, func(set toolSet) bool { return set.name == name })
		switch {
		case i >= 0:
			for _, t := range toolSets[i].tools() {
				want[t] = true
			}
		case slices.Contains(ToolNames(), name):
			want[name] = true
		default:
			return nil, fmt.Errorf("there is no tool or set of tools %q: the names are %s", name, strings.Join(ToolsetNames(), ", "))
		}
	}
	if len(want) == 0 {
		return nil, errors.New("names no tool: give " + config.DefaultToolset + " (the default) or some of " + strings.Join(ToolsetNames(), ", "))
	}
	for _, t := range Tools {
		if want[t.Name] && (t.Family == ExpertFamily || t.Name == "chat" || t.Name == "chat-reply") {
			want[pager], want[jobber] = true, true
		}
		if want[t.Name] && t.Name == "research" {
			// A research job's report is read with job, and a long one's
			// pages with chat-page.
			want[pager], want[jobber] = true, true
		}
	}
	return namesOf(func(t Tool) bool { return want[t.Name] }), nil
}

package server

import (
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/expert"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/tools"
)

// Family is a kind of tool: the package it is written in, and how it
// fails.
type Family string

const (
	// ChatFamily tools (internal/tools) fail with error results, a call
	// over its rate limit too.
	ChatFamily Family = "chat"
	// ExpertFamily tools (internal/expert) fail with JSON-RPC errors in
	// the expert tools' categories, a call over its rate limit too.
	ExpertFamily Family = "expert"
)

// Tool is one tool the server offers. Its schema is snapshotted in
// internal/app/testdata/toolsnaps/<Name>.json, its prompt, when it has
// one, in internal/app/testdata/promptsnaps/<Name>.json.
type Tool struct {
	Name   string
	Family Family
	// Prompt is set when the tool is also an MCP prompt of the same name.
	Prompt bool
	// add adds the tool (and its prompt) to a server.
	add func(s *mcp.Server, f Families)
}

// Families are the dependencies of each family of tools, each complete
// before the server is built. A nil one leaves its family out (the tests
// of one family).
type Families struct {
	Chat   *tools.Deps
	Expert *expert.Deps
	// Serve are the tools to serve (--tools, see ParseToolset); nil
	// serves every tool.
	Serve []string
}

// serves reports whether f serves the tool name.
func (f Families) serves(name string) bool {
	return f.Serve == nil || slices.Contains(f.Serve, name)
}

// Tools are every tool the server offers: adding a tool is adding it here
// (and writing it, in its family's package).
var Tools = []Tool{
	chat("chat", tools.AddChat),
	chat("chat-reply", tools.AddReply),
	chat("chat-page", tools.AddPage),
	chat("sessions", tools.AddSessions),
	chat("job", tools.AddJob),
	chat("image", tools.AddImage),
	chat("research", tools.AddResearch),
	expertTool(expert.Thinkdeep),
	expertTool(expert.Analyze),
	expertTool(expert.Codereview),
	expertTool(expert.Debug),
	expertTool(expert.Precommit),
}

func chat(name string, add func(*mcp.Server, *tools.Deps)) Tool {
	return Tool{Name: name, Family: ChatFamily, add: func(s *mcp.Server, f Families) {
		if f.Chat != nil {
			add(s, f.Chat)
		}
	}}
}

// expertTool is an expert tool, each also a prompt.
func expertTool(t *expert.Tool) Tool {
	return Tool{Name: t.Name(), Family: ExpertFamily, Prompt: true, add: func(s *mcp.Server, f Families) {
		if f.Expert != nil {
			t.Add(s, f.Expert)
			t.AddPrompt(s)
		}
	}}
}

// ToolNames are the names of every tool the server offers, in the
// registry's order: the tools a rate limit may name.
func ToolNames() []string { return namesOf(func(Tool) bool { return true }) }

// RPCErrorTools are the tools that fail with JSON-RPC errors (the expert
// family), which the rate limiter refuses with one.
func RPCErrorTools() []string {
	return namesOf(func(t Tool) bool { return t.Family == ExpertFamily })
}

func namesOf(keep func(Tool) bool) []string {
	var names []string
	for _, t := range Tools {
		if keep(t) {
			names = append(names, t.Name)
		}
	}
	return names
}

// register adds every tool f serves of the families it provides to s.
func register(s *mcp.Server, f Families) {
	for _, t := range Tools {
		if f.serves(t.Name) {
			t.add(s, f)
		}
	}
}

// andList joins names as prose: "a, b and c".
func andList(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

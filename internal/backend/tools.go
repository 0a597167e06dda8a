package backend

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ToolHost gives Gemini the tools of other MCP servers: the server acts as
// an MCP host, as the Gemini CLI does with its mcpServers (package
// mcphost implements it). Only the API backend uses it: the Gemini CLI
// talks to its own MCP servers.
type ToolHost interface {
	// Tools returns the tools to declare to Gemini now, from the servers
	// connected at this moment: names built as the Gemini CLI builds them
	// (mcp_<server>_<tool>, sanitized, at most 63 characters), schemas in a
	// form the Gemini API accepts ($defs and $ref resolved).
	Tools() []HostTool

	// Call runs the tool declared as name on its server with args, within
	// the server's timeout and ctx, and returns the server's result (a
	// result with IsError set is the tool's failure, for Gemini to read;
	// an error is the call's: unknown tool, server gone, timeout). It does
	// not ask for confirmation: that is the caller's, by HostTool.Trusted.
	Call(ctx context.Context, name string, args map[string]any) (*mcp.CallToolResult, error)
}

// ToolExplainer is a ToolHost that can say why a tool Gemini asks for is
// not declared now (its server waits for a sign-in, say); nil when it
// cannot tell.
type ToolExplainer interface {
	Unavailable(name string) error
}

// HostTool is one downstream tool as declared to Gemini.
type HostTool struct {
	Name        string         // as declared to Gemini: mcp_<server>_<tool>, sanitized
	Server      string         // the server's name in the configuration
	Tool        string         // the tool's own name on its server
	Description string         // the tool's description
	Schema      map[string]any // its input schema, as Gemini accepts it
	// Trusted is the server's trust setting: a trusted server's tools run
	// without asking the user.
	Trusted bool
}

// Confirm asks the user whether an untrusted tool may run. It returns the
// user's decision, or an error when the user could not be asked (the
// client cannot elicit; the call ended), which counts as a refusal whose
// reason Gemini is told.
type Confirm func(ctx context.Context, req ConfirmRequest) (Decision, error)

// ConfirmRequest is what the user is asked about.
type ConfirmRequest struct {
	Tool HostTool
	Args map[string]any
}

// Decision is the user's answer to a ConfirmRequest.
type Decision int

const (
	// Decline refuses this call.
	Decline Decision = iota
	// AllowOnce allows this call only.
	AllowOnce
	// AllowTool allows this call and, from now on, this tool: the Confirm
	// remembers it for whoever it asks (see tools' grants), the backend
	// runs this call.
	AllowTool
	// AllowServer allows this call and, from now on, every tool of this
	// server, remembered by the Confirm likewise.
	AllowServer
)

package geminitest

// MCPDownPackage is the import path of the downstream MCP server that the
// MCP host's tests connect to.
const MCPDownPackage = "github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/mcpdown"

// BuildMCPDown compiles the downstream test MCP server into a new
// temporary directory, as BuildFake does for the fake CLI. cleanup removes
// it; call it once no process started from it is running.
func BuildMCPDown() (path string, cleanup func(), err error) {
	return buildTool("mcpdown", "mcpdown-", "mcpdown", MCPDownPackage)
}

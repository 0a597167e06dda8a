package geminitest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// MCPDownPackage is the import path of the downstream MCP server that the
// MCP host's tests connect to.
const MCPDownPackage = "github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/mcpdown"

// BuildMCPDown compiles the downstream test MCP server into a new
// temporary directory, as BuildFake does for the fake CLI. cleanup removes
// it; call it once no process started from it is running.
func BuildMCPDown() (path string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "mcpdown-")
	if err != nil {
		return "", nil, fmt.Errorf("building mcpdown: %w", err)
	}
	cleanup = func() { os.RemoveAll(dir) }
	path = filepath.Join(dir, "mcpdown")
	if runtime.GOOS == "windows" {
		path += ".exe"
	}
	cmd := exec.Command("go", "build", "-o", path, MCPDownPackage)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("building mcpdown: go build %s: %w\n%s", MCPDownPackage, err, out.Bytes())
	}
	return path, cleanup, nil
}

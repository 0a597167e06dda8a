// Command gemini-mcp-server serves Google Gemini as MCP tools through the
// Gemini CLI. See the README, or run it with --help.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/app"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// without it the module's build information is used.
var version string

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app.Run(ctx, version, os.Args[1:], app.IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
	stop()
	os.Exit(code)
}

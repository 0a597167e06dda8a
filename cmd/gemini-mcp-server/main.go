// Command gemini-mcp-server serves Google Gemini as MCP tools through the
// Gemini CLI. See the README, or run it with --help.
//
// Its version, commit and date are internal/buildinfo's, stamped at build
// time with -ldflags -X (.goreleaser.yaml shows how) or read from what Go
// recorded.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/app"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := app.Run(ctx, os.Args[1:], app.IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv})
	stop()
	os.Exit(code)
}

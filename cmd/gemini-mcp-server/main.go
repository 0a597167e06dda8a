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
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/app"
)

// sameCtrlC is how soon after a first SIGINT a second one is taken for
// the same Ctrl-C.
const sameCtrlC = 250 * time.Millisecond

func main() {
	// The first SIGINT or SIGTERM stops the server (over HTTP, after a
	// drain); a second one ends that drain at once.
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	ctx, stop := context.WithCancel(context.Background())
	hurry := make(chan struct{})
	go func() {
		first := <-signals
		at := time.Now()
		stop()
		for s := range signals {
			if s == os.Interrupt && first == os.Interrupt && time.Since(at) < sameCtrlC {
				// One Ctrl-C reaches every process of the terminal's
				// foreground group: under the npm launcher, which passes
				// it on, the server gets it twice.
				continue
			}
			close(hurry)
			return
		}
	}()
	code := app.Run(ctx, os.Args[1:], app.IO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Hurry: hurry})
	signal.Stop(signals)
	os.Exit(code)
}

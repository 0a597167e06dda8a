package acp

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/cli"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/clihome"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/proc"
)

// launcher starts warm processes: the CLI in ACP mode with the operator's
// flags, a system prompt per process, the server's environment.
type launcher struct {
	env          []string // added to the server's environment (cli.ChildEnv)
	operatorArgs []string
	allow        bool // answer permission requests with allow (approval mode yolo)
	maxOutput    int  // one answer's cap
	log          *slog.Logger
}

// start starts a process with the system prompt whose key is key, and
// completes its handshake.
func (l *launcher) start(ctx context.Context, cmd cli.Command, key, systemPrompt string) (*acpProc, error) {
	env := cli.ChildEnv(l.env)
	sysDir := ""
	if systemPrompt != "" {
		// The system prompt is per process: it lives as long as the process.
		dir, err := os.MkdirTemp("", "gemini-mcp-")
		if err != nil {
			return nil, cli.StartError("cannot create a temporary directory for the system prompt: "+err.Error(), err)
		}
		path := filepath.Join(dir, "SYSTEM.md")
		if err := os.WriteFile(path, []byte(systemPrompt), 0o600); err != nil {
			os.RemoveAll(dir)
			return nil, cli.StartError("cannot write the system prompt file: "+err.Error(), err)
		}
		env = proc.SetEnv(env, "GEMINI_SYSTEM_MD", path)
		sysDir = dir
	}
	args := append([]string{"--acp"}, l.operatorArgs...)
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	p, err := startACP(sctx, cmd, args, env, key, sysDir, l.allow, l.maxOutput, l.log)
	if err != nil {
		if sysDir != "" {
			os.RemoveAll(sysDir)
		}
		return nil, cli.StartError("the warm gemini process could not start: "+err.Error(), err)
	}
	// Not yet shared: its read loop touches none of these.
	p.cliDir = clihome.Dir(clihome.Getenv(env))
	p.cmdline, p.system = cmd, systemPrompt
	return p, nil
}

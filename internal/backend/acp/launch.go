package acp

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/clihome"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/geminicli"
)

// launcher starts warm processes: the CLI in ACP mode with the operator's
// flags, a system prompt per process, the server's environment.
type launcher struct {
	env          []string // added to the server's environment (geminicli.ChildEnv)
	operatorArgs []string
	allow        bool // answer permission requests with allow (approval mode yolo)
	maxOutput    int  // one answer's cap
	log          *slog.Logger
}

// start starts a process with the system prompt whose key is key, and
// completes its handshake.
func (l *launcher) start(ctx context.Context, cmd geminicli.Command, key, systemPrompt string) (*acpProc, error) {
	env := geminicli.ChildEnv(l.env)
	sysDir := ""
	if systemPrompt != "" {
		// The system prompt is per process: it lives as long as the process.
		dir, withPrompt, err := geminicli.SystemPromptFile(env, systemPrompt)
		if err != nil {
			return nil, err
		}
		env, sysDir = withPrompt, dir
	}
	args := append([]string{"--acp"}, l.operatorArgs...)
	sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	p, err := startACP(sctx, cmd, args, env, key, sysDir, l.allow, l.maxOutput, l.log)
	if err != nil {
		if sysDir != "" {
			os.RemoveAll(sysDir)
		}
		return nil, geminicli.StartError("the warm gemini process could not start: "+err.Error(), err)
	}
	// Not yet shared: its read loop touches none of these.
	p.cliDir = clihome.Dir(clihome.Getenv(env))
	p.cmdline, p.system = cmd, systemPrompt
	return p, nil
}

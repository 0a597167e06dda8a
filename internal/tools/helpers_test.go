package tools

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func realTemp(t *testing.T) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mkdir(p string) error { return os.Mkdir(p, 0o755) }

// addAll adds the chat tools to s, as the server's registry does.
func addAll(s *mcp.Server, d *Deps) {
	AddChat(s, d)
	AddReply(s, d)
	AddPage(s, d)
	AddSessions(s, d)
}

package tools

import (
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
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
	AddImage(s, d)
}

// convs are the options each test's pipeline was made with (newConv),
// which the pipeline does not hand out: the tests read their store and
// directory from them, as the server's composition root holds its own.
var convs sync.Map // *conversation.Service → conversation.Options

// newConv is conversation.New, its options kept for optsOf.
func newConv(o conversation.Options) *conversation.Service {
	if o.Now == nil {
		o.Now = time.Now
	}
	c := conversation.New(o)
	convs.Store(c, o)
	return c
}

// optsOf returns the options d's pipeline was made with.
func optsOf(d *Deps) conversation.Options {
	o, _ := convs.Load(d.Conv)
	return o.(conversation.Options)
}

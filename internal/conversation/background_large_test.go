package conversation

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// charting is a backend whose answer carries n images of size bytes
// each, as code execution's charts come.
type charting struct{ n, size int }

func (b charting) Name() string          { return "api" }
func (b charting) Family() config.Family { return config.FamilyAPI }
func (b charting) Close()                {}
func (b charting) Run(context.Context, backend.Turn) (*backend.Answer, error) {
	a := &backend.Answer{Text: "the charts"}
	for i := range b.n {
		a.Images = append(a.Images, backend.Image{MIMEType: "image/png", Data: make([]byte, b.size+i)})
	}
	return a, nil
}

// withImages renders an answer as the tools do: its text, then its images.
func withImages(_ context.Context, o Outcome) (*mcp.CallToolResult, error) {
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: o.Answer.Text}}}
	for _, im := range o.Answer.Images {
		res.Content = append(res.Content, &mcp.ImageContent{MIMEType: im.MIMEType, Data: im.Data})
	}
	return res, nil
}

// TestBackgroundLargeResult: a background turn whose result is past
// 4 MiB of JSON (six charts of 1 MiB, 8 MiB in base64) completes with
// that result, as the same call in the foreground returns it.
func TestBackgroundLargeResult(t *testing.T) {
	t.Parallel()
	mem := memstore.New(session.Options{})
	t.Cleanup(func() { _ = mem.Close() })
	life, stop := context.WithCancel(context.Background())
	defer stop()
	d := New(Options{Backend: charting{n: 6, size: 1 << 20}, Store: mem, Jobs: jobs.Of(mem), DefaultCwd: t.TempDir(), Lifetime: life})
	res, err := d.Do(context.Background(), Request{Turn: backend.Turn{Prompt: "chart it"}, Render: withImages, Background: true,
		Call: &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "chat"}}})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := res.Meta["jobId"].(string)
	j := untilJob(t, mem, id, func(j jobs.Job) bool { return j.Status.Final() })
	if j.Status != jobs.Completed || len(j.Result) <= 4<<20 {
		t.Fatalf("the job of a large result: %s, %d bytes of result, error %q", j.Status, len(j.Result), j.Error)
	}
	got, err := j.CallToolResult()
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Content) != 7 || len(got.Content[6].(*mcp.ImageContent).Data) != 1<<20+5 {
		t.Fatalf("the stored result has %d items", len(got.Content))
	}
}

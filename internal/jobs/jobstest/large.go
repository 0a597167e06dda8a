package jobstest

import (
	"bytes"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
)

// largeResult: a result past 4 MiB of JSON (images a turn's code made,
// inline) is kept whole and read on the other replica.
func largeResult(t *testing.T, open Open) {
	a, b := open(t)
	j := create(t, a, "", time.Hour, jobs.Limits{})
	chart := bytes.Repeat([]byte{0x89, 'P', 'N', 'G'}, 3<<20/4)
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "the charts"},
		&mcp.ImageContent{MIMEType: "image/png", Data: chart}, &mcp.ImageContent{MIMEType: "image/png", Data: chart}}}
	change(t, a, "", j.ID, func(j *jobs.Job) error {
		if err := j.Start(time.Now()); err != nil {
			return err
		}
		return j.Complete(res, time.Now())
	})
	done, _ := get(t, b, "", j.ID)
	back, err := done.CallToolResult()
	if err != nil {
		t.Fatal(err)
	}
	if len(done.Result) <= 4<<20 || len(back.Content) != 3 || !bytes.Equal(back.Content[2].(*mcp.ImageContent).Data, chart) {
		t.Fatalf("B's result of %d bytes has %d items", len(done.Result), len(back.Content))
	}
}

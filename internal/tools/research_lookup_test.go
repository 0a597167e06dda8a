package tools

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
)

// fillResearch stores n finished research jobs of owner in s, each with
// a report of size bytes and the interaction "interaction-I" as its
// resume handle.
func fillResearch(tb testing.TB, s jobs.Store, owner string, n, size int) {
	tb.Helper()
	ctx := context.Background()
	report := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("a cited sentence. ", size/18+1)[:size]}}}
	for i := range n {
		now := time.Now()
		j, err := jobs.New(owner, "research", time.Hour, now)
		if err == nil {
			j, err = s.CreateJob(ctx, j, jobs.Limits{PerOwner: n, Total: n})
		}
		if err == nil {
			err = j.Start(now)
		}
		if err == nil {
			err = j.SetResume(fmt.Sprint("interaction-", i), now)
		}
		if err == nil {
			err = j.Complete(report, now)
		}
		if err == nil {
			_, err = s.UpdateJob(ctx, j)
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkContinueFrom measures research's continue_from lookup among
// 1,000 finished research jobs of the caller, each with a 100 KB report,
// on the memory store: a reference that matches no job (neither a job id
// nor an interaction id of the caller's), and an interaction id that
// does.
func BenchmarkContinueFrom(b *testing.B) {
	st := memstore.New(session.Options{})
	b.Cleanup(func() { st.Close() })
	d := &Deps{Jobs: jobs.Of(st)}
	fillResearch(b, d.Jobs, "tok", 1000, 100_000)
	ctx := context.Background()
	b.Run("no-match", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := d.interactionOf(ctx, "tok", "interaction-none"); err == nil {
				b.Fatal("a reference to nothing was found")
			}
		}
	})
	b.Run("interaction", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if id, err := d.interactionOf(ctx, "tok", "interaction-500"); err != nil || id != "interaction-500" {
				b.Fatal(id, err)
			}
		}
	})
}

// TestResearchContinueByInteraction: continue_from takes the interaction
// id of a plan (its _meta.interactionId) as well as its job's id.
func TestResearchContinueByInteraction(t *testing.T) {
	t.Parallel()
	d, _ := researchDeps(t)
	id := startResearch(t, d, "tok", ResearchInput{Query: "plan the coffee study", Plan: true})
	res, err := jobEnd(t, d, "tok", id)
	if err != nil || res.IsError {
		t.Fatalf("the plan: %v %v", res, err)
	}
	next := startResearch(t, d, "tok", ResearchInput{Query: "go ahead", ContinueFrom: res.Meta["interactionId"].(string)})
	res, err = jobEnd(t, d, "tok", next)
	if err != nil || res.IsError || res.Meta["plan"] == true || !strings.Contains(textOf(res), "Sources:") {
		t.Fatalf("the research continued from the plan's interaction: %v %v", res, err)
	}
}

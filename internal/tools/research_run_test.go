package tools

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/api/interact"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
)

// scriptedResearcher starts one interaction, whose poll reports the
// results of progress one after the other, at once, and then ends with
// err.
type scriptedResearcher struct {
	progress []*interact.Result
	err      error
}

func (s *scriptedResearcher) StartAgent(context.Context, interact.AgentRequest) (*interact.Result, error) {
	return &interact.Result{ID: "v1_scripted", Status: interact.InProgress}, nil
}

func (s *scriptedResearcher) Wait(_ context.Context, _ string, o interact.WaitOptions) (*interact.Result, error) {
	for _, p := range s.progress {
		o.Progress(p)
	}
	return s.progress[len(s.progress)-1], s.err
}

func (s *scriptedResearcher) Cancel(context.Context, string) (*interact.Result, error) {
	return nil, nil
}

// TestResearchKeepsThoughtsHeldBack: thought summaries that came within
// the progress rate limit of the one written before are not lost when
// the poll ends at once after them (here with an error polling again
// cannot mend): the failed job's output so far has them all, and its
// last progress is the latest.
func TestResearchKeepsThoughtsHeldBack(t *testing.T) {
	t.Parallel()
	d, _ := researchDeps(t)
	var steps []*interact.Result
	var thoughts []string
	for i := range 4 {
		thoughts = append(thoughts, fmt.Sprintf("thought %d", i+1))
		steps = append(steps, &interact.Result{ID: "v1_scripted", Status: interact.InProgress, Thoughts: append([]string(nil), thoughts...)})
	}
	rs := &scriptedResearcher{progress: steps, err: fmt.Errorf("interaction v1_scripted: %w", interact.ErrNotFound)}
	d.Research = func() (Researcher, error) { return rs, nil }
	id := startResearch(t, d, "tok", ResearchInput{Query: "quick thoughts"})
	res, err := jobEnd(t, d, "tok", id)
	if err != nil || res.Meta["jobStatus"] != string(jobs.Failed) {
		t.Fatalf("the research: %v %v", res, err)
	}
	j, _, err := d.Jobs.GetJob(context.Background(), "tok", id)
	if err != nil {
		t.Fatal(err)
	}
	want := "Thought summaries:\n\n" + strings.Join(thoughts, "\n\n")
	if j.Partial != want || j.Message != "thought 4" {
		t.Fatalf("the failed job's output so far %q, its progress %q; want %q and the latest thought", j.Partial, j.Message, want)
	}
}

// TestResearchSoFarTail: the output so far built from its end alone is
// the end of the whole output, cut where jobs.CutTail cuts it (at a
// rune's start), with the bytes before it counted, whatever the sizes.
func TestResearchSoFarTail(t *testing.T) {
	t.Parallel()
	whole := func(p *interact.Result) string {
		var parts []string
		if len(p.Thoughts) > 0 {
			parts = append(parts, "Thought summaries:\n\n"+strings.Join(p.Thoughts, "\n\n"))
		}
		if p.Text != "" {
			parts = append(parts, "The report so far:\n\n"+p.Text)
		}
		return strings.Join(parts, "\n\n")
	}
	results := []*interact.Result{
		{Thoughts: []string{"one"}},
		{Text: "only the report"},
		{Thoughts: []string{"é thought", strings.Repeat("éa", 3000)}, Text: strings.Repeat("ü", 5000) + "end"},
		{Thoughts: []string{strings.Repeat("x", 9000)}},
	}
	for ri, p := range results {
		full := whole(p)
		for _, max := range []int{1, 2, 3, 7, 100, 4097, jobs.MaxPartialTailBytes, len(full) - 1, len(full), len(full) + 10} {
			if max < 1 {
				continue
			}
			want, dropped := jobs.CutTail(full, max)
			tail, before := researchSoFar(p, max)
			if tail != want || before != dropped {
				t.Errorf("result %d, max %d: %d bytes after %d, want %d after %d", ri, max, len(tail), before, len(want), dropped)
			}
		}
	}
}

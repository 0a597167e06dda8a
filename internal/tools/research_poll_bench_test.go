package tools

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/backend/api/interact"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/conversation"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/redistest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/jobs"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/embedded"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/memstore"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/session/redisstore"
)

// roundTrips counts the calls of the job store it wraps: each is one
// round trip on Redis (a command or a script) and one statement on SQLite.
type roundTrips struct {
	jobs.Store
	n atomic.Int64
}

func (r *roundTrips) GetJob(ctx context.Context, owner, id string) (jobs.Job, bool, error) {
	r.n.Add(1)
	return r.Store.GetJob(ctx, owner, id)
}

func (r *roundTrips) UpdateJob(ctx context.Context, j jobs.Job) (jobs.Job, error) {
	r.n.Add(1)
	return r.Store.UpdateJob(ctx, j)
}

func (r *roundTrips) WaitJob(ctx context.Context, owner, id string, version int64, max time.Duration) (jobs.Job, bool, error) {
	r.n.Add(1)
	return r.Store.WaitJob(ctx, owner, id, version, max)
}

// benchStores are the stores the research benchmarks run on.
var benchStores = []string{"memory", "embedded", "redis"}

// openBenchStore opens a store of kind (Redis a local redis-server over
// 127.0.0.1), closed at b's end.
func openBenchStore(b *testing.B, kind string) session.Store {
	var st session.Store
	var err error
	switch kind {
	case "memory":
		st = memstore.New(session.Options{})
	case "embedded":
		st, err = embedded.Open(filepath.Join(b.TempDir(), "state.db"), session.Options{})
	case "redis":
		st, err = redisstore.Open(context.Background(), redistest.Start(b).URL(0), session.Options{})
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	return st
}

// midResearch is a running research mid-way through a medium report, as
// the Interactions API reports it: 40 thought summaries and 80 KB of the
// report so far.
func midResearch() *interact.Result {
	p := &interact.Result{Status: interact.InProgress, Text: strings.Repeat("A sentence of the report, with a source. ", 2000)}
	for i := range 40 {
		p.Thoughts = append(p.Thoughts, strings.Repeat(fmt.Sprintf("thought %d ", i), 20))
	}
	return p
}

// runningResearch stores a running research job of "tok" in s, as its
// runner keeps it after writing p.
func runningResearch(b *testing.B, s jobs.Store, p *interact.Result) jobs.Job {
	ctx := context.Background()
	now := time.Now()
	j, err := jobs.New("tok", "research", time.Hour, now)
	if err == nil {
		j, err = s.CreateJob(ctx, j, jobs.Limits{})
	}
	if err == nil {
		err = j.Start(now)
	}
	if err == nil {
		j, err = s.UpdateJob(ctx, j)
	}
	if err != nil {
		b.Fatal(err)
	}
	(&researchRun{jobs: s}).write(ctx, j, p)
	j, _, err = s.GetJob(ctx, "tok", j.ID)
	if err != nil || j.Partial == "" {
		b.Fatal(j, err)
	}
	return j
}

// BenchmarkResearchJobPoll is one call of the job tool, without wait, on
// a running research job as its runner keeps it mid-way through a medium
// report (midResearch: its output so far, of which the job keeps the end,
// and the latest thought as its progress), on each store. It reports the
// store's round trips per poll and the bytes of the answer's text.
func BenchmarkResearchJobPoll(b *testing.B) {
	for _, kind := range benchStores {
		b.Run(kind, func(b *testing.B) {
			st := openBenchStore(b, kind)
			rt := &roundTrips{Store: jobs.Of(st)}
			d := &Deps{Conv: newConv(conversation.Options{Backend: &stubRunner{}, Store: st, DefaultCwd: b.TempDir(), Remote: true}), Jobs: rt}
			j := runningResearch(b, rt, midResearch())
			req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "job", Arguments: []byte(`{"jobId":"` + j.ID + `"}`)}}
			caller := as("tok")
			rt.n.Store(0)
			var text int
			b.ReportAllocs()
			for b.Loop() {
				res, _, err := d.job(caller, req, JobInput{JobID: j.ID})
				if err != nil || res.Meta["jobStatus"] != "working" {
					b.Fatal(res, err)
				}
				text = len(textOf(res))
			}
			b.ReportMetric(float64(rt.n.Load())/float64(b.N), "store-calls/op")
			b.ReportMetric(float64(text), "answer-B")
			b.ReportMetric(float64(len(j.Partial)), "partial-B")
		})
	}
}

// BenchmarkResearchRunnerWrite is what the runner does with a poll's
// result that changed (at most once every researchReportEvery): it writes
// the output so far and the latest thought into the job (a read and a
// conditional write), on each store. With the Interactions API's Get
// (interact's BenchmarkPollRunning), it is the runner's cost of a poll.
func BenchmarkResearchRunnerWrite(b *testing.B) {
	for _, kind := range benchStores {
		b.Run(kind, func(b *testing.B) {
			st := openBenchStore(b, kind)
			rt := &roundTrips{Store: jobs.Of(st)}
			p := midResearch()
			j := runningResearch(b, rt, p)
			r := &researchRun{jobs: rt}
			ctx := context.Background()
			rt.n.Store(0)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				p.Thoughts[39] = fmt.Sprintf("thought %d", i)
				r.write(ctx, j, p)
			}
			got, _, err := rt.Store.GetJob(ctx, "tok", j.ID)
			if err != nil || got.Message != p.Thoughts[39] {
				b.Fatalf("the job's progress %q, want %q: %v", got.Message, p.Thoughts[39], err)
			}
			b.ReportMetric(float64(rt.n.Load())/float64(b.N), "store-calls/op")
		})
	}
}

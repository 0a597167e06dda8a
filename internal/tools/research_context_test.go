package tools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/filectx"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest"
	"github.com/gemini-mcp-server/gemini-mcp-server/internal/geminitest/fakeapi"
)

// TestResearchContext: research's files are read by the file context
// (a credential file skipped, its secret never sent) and its URLs
// checked as chat's are; both reach the agent as context blocks after
// the query, which the fake's report echoes. Bad entries and URLs, and
// media the agent does not read, are clear errors before anything is
// sent.
func TestResearchContext(t *testing.T) {
	t.Parallel()
	d, fake := researchDeps(t)
	root := realTemp(t)
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("notes.txt", "the tea notes\n")
	write(".env", "API_TOKEN=very-secret-value-123\n")
	write("paper.pdf", "%PDF-1.4\n% a fake paper\n%%EOF\n")
	write("pic.png", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	d.Files = &filectx.Service{Root: root, Options: filectx.Options{Media: true}}

	started, _, err := d.research(as("tok"), request(t, "research", nil), ResearchInput{Query: "tea [[steps:0]]",
		Files: []string{"notes.txt", ".env", "paper.pdf"}, URLs: []string{"https://example.com/tea"}})
	if err != nil {
		t.Fatal(err)
	}
	skipped, _ := started.Meta["filesSkipped"].([]filectx.FileNote)
	if len(skipped) != 1 || skipped[0].Path != ".env" || !strings.HasPrefix(skipped[0].Reason, "secret-file") {
		t.Errorf("the start's _meta.filesSkipped: %+v", started.Meta["filesSkipped"])
	}
	if sent, _ := started.Meta["filesProcessed"].([]filectx.FileNote); len(sent) != 2 {
		t.Errorf("the start's _meta.filesProcessed: %+v", started.Meta["filesProcessed"])
	}
	res, err := jobEnd(t, d, "tok", started.Meta["jobId"].(string))
	if err != nil || res.IsError {
		t.Fatalf("the research: %v %v", err, res)
	}
	report := textOf(res)
	if !strings.HasPrefix(report, fakeapi.ReportText("tea [[steps:0]]")+"\n\nContext received:\n[text]\n## Files\n") ||
		!strings.Contains(report, "the tea notes") || !strings.Contains(report, "\n[document] application/pdf, 30 bytes") || !strings.Contains(report, researchURLsHeading+"https://example.com/tea") {
		t.Errorf("the report does not echo the files and URLs:\n%s", report)
	}
	for _, r := range fake.Requests() {
		if strings.Contains(string(r.Body), "very-secret-value") || strings.Contains(string(r.Body), "API_TOKEN") {
			t.Errorf("the .env reached the API: %s", r.Body)
		}
	}

	before := len(fake.Requests())
	for _, c := range []struct {
		in   ResearchInput
		want string
	}{
		{ResearchInput{Query: "q", Files: []string{" "}}, "a files entry is empty"},
		{ResearchInput{Query: "q", Files: []string{"../outside"}}, "outside"},
		{ResearchInput{Query: "q", Files: []string{".env"}}, "nothing could be sent of .env (.env: secret-file"},
		{ResearchInput{Query: "q", Files: []string{"pic.png"}}, "which the research agent does not read"},
		{ResearchInput{Query: "q", URLs: []string{"http://127.0.0.1/x"}}, "urls[0]: URL \"http://127.0.0.1/x\" is refused"},
		{ResearchInput{Query: "q", URLs: slices.Repeat([]string{"https://example.com/"}, 21)}, "over the Gemini API's limit of 20"},
	} {
		if _, _, err := d.research(as("tok"), request(t, "research", nil), c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("research with files %q, urls %q: %v, want %q", c.in.Files, c.in.URLs, err, c.want)
		}
	}
	if n := len(fake.Requests()) - before; n != 0 {
		t.Errorf("%d requests sent for refused calls", n)
	}
	d.Files = nil
	if _, _, err := d.research(as("tok"), request(t, "research", nil), ResearchInput{Query: "q", Files: []string{"notes.txt"}}); err == nil ||
		!strings.Contains(err.Error(), "reads no project files") {
		t.Errorf("files on a server without file context: %v", err)
	}
}

// TestResearchFilesMeta: what of research's files was sent and left out
// is in the _meta of the answer that starts the job, of the report a
// wait returns inline and of the report the job tool returns, the same
// in all three.
func TestResearchFilesMeta(t *testing.T) {
	t.Parallel()
	d, _ := researchDeps(t)
	root := realTemp(t)
	for name, content := range map[string]string{"notes.txt": "the tea notes\n", ".env": "API_TOKEN=very-secret-value-123\n"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	d.Files = &filectx.Service{Root: root}
	in := ResearchInput{Query: "tea [[steps:0]]", Files: []string{"notes.txt", ".env"}}
	files := func(what string, res *mcp.CallToolResult) string {
		t.Helper()
		b, err := json.Marshal(map[string]any{"processed": res.Meta["filesProcessed"], "skipped": res.Meta["filesSkipped"]})
		if err != nil {
			t.Fatal(err)
		}
		var got struct{ Processed, Skipped []filectx.FileNote }
		if err := json.Unmarshal(b, &got); err != nil || len(got.Processed) != 1 || got.Processed[0].Path != "notes.txt" ||
			len(got.Skipped) != 1 || got.Skipped[0].Path != ".env" {
			t.Errorf("%s: _meta.filesProcessed %v, filesSkipped %v; want notes.txt sent and .env left out",
				what, res.Meta["filesProcessed"], res.Meta["filesSkipped"])
		}
		return string(b)
	}

	started, _, err := d.research(as("tok"), request(t, "research", nil), in)
	if err != nil {
		t.Fatal(err)
	}
	res, err := jobEnd(t, d, "tok", started.Meta["jobId"].(string))
	if err != nil || res.IsError {
		t.Fatalf("the research: %v %v", err, res)
	}
	want := files("the start", started)
	if got := files("the job's report", res); got != want {
		t.Errorf("the job's report says %s, the start %s", got, want)
	}
	// The job's record keeps them, for a run resumed by another process
	// (TestResearchResumed).
	j, _, err := d.Jobs.GetJob(geminitest.Context(t), "tok", started.Meta["jobId"].(string))
	if err != nil {
		t.Fatal(err)
	}
	var kept map[string]json.RawMessage
	if err := json.Unmarshal(j.ResultMeta, &kept); err != nil {
		t.Fatalf("the job's record keeps %q: %v", j.ResultMeta, err)
	}
	if got := files("the job's record", &mcp.CallToolResult{Meta: mcp.Meta{"filesProcessed": kept["filesProcessed"],
		"filesSkipped": kept["filesSkipped"]}}); got != want {
		t.Errorf("the job's record says %s, the start %s", got, want)
	}

	in.Wait = MaxJobWait
	inline, _, err := d.research(as("tok"), request(t, "research", nil), in)
	if err != nil || inline.IsError || !strings.HasPrefix(textOf(inline), fakeapi.ReportText(in.Query)) {
		t.Fatalf("research with wait: %v %v", inline, err)
	}
	if got := files("the report of a wait", inline); got != want {
		t.Errorf("the report of a wait says %s, the start %s", got, want)
	}
}

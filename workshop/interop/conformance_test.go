package interop

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// genericScenarios are the conformance scenarios that need nothing but a
// working MCP server: each must pass outright, with at least one successful
// check (a scenario that checked nothing proves nothing).
var genericScenarios = []string{
	"server-initialize", "ping", "tools-list", "prompts-list", "resources-list",
	"logging-set-level", "dns-rebinding-protection",
}

// failureRule says how a baselined scenario may fail: every FAILURE or
// WARNING check must match one of its rules. This pins the reasons the
// baseline gives, so a scenario that starts failing for another reason (the
// server broke, rather than lacking a fixture) fails the test even though
// it is listed.
type failureRule struct {
	warningOnly bool           // the check may be a WARNING, not a FAILURE
	id          string         // the check's id, "" for any
	msg         *regexp.Regexp // matches the check's errorMessage; nil for any
}

var (
	unknownTool   = failureRule{msg: regexp.MustCompile(`^Failed: MCP error -32602: unknown tool "test_[a-z0-9_]+"$`)}
	unknownPrompt = failureRule{msg: regexp.MustCompile(`^Failed: MCP error -32602: unknown prompt "test_[a-z0-9_]+"$`)}
	noResource    = failureRule{msg: regexp.MustCompile(`^Failed: MCP error -32602: Resource not found$`)}
	noSubscribe   = failureRule{msg: regexp.MustCompile(`^Failed: MCP error -32601: method not found: "resources/subscribe"$`)}
	noSSEResume   = []failureRule{{warningOnly: true, id: "server-sse-priming-event"}, {warningOnly: true, id: "server-sse-retry-field"}}
)

var baselineRules = map[string][]failureRule{
	"completion-complete":           {{msg: regexp.MustCompile(`^Failed: MCP error -32601: method not found: "completion/complete"$`)}},
	"tools-call-simple-text":        {unknownTool},
	"tools-call-image":              {unknownTool},
	"tools-call-audio":              {unknownTool},
	"tools-call-embedded-resource":  {unknownTool},
	"tools-call-mixed-content":      {unknownTool},
	"tools-call-with-logging":       {unknownTool},
	"tools-call-error":              {unknownTool},
	"tools-call-with-progress":      {unknownTool},
	"tools-call-sampling":           {unknownTool},
	"tools-call-elicitation":        {unknownTool},
	"elicitation-sep1034-defaults":  {unknownTool},
	"elicitation-sep1330-enums":     {unknownTool},
	"json-schema-2020-12":           {{id: "json-schema-2020-12-tool-found"}},
	"resources-read-text":           {noResource},
	"resources-read-binary":         {noResource},
	"resources-templates-read":      {noResource},
	"resources-subscribe":           {noSubscribe},
	"resources-unsubscribe":         {noSubscribe},
	"prompts-get-simple":            {unknownPrompt},
	"prompts-get-with-args":         {unknownPrompt},
	"prompts-get-embedded-resource": {unknownPrompt},
	"prompts-get-with-image":        {unknownPrompt},
	"server-sse-polling":            append(slices.Clone(noSSEResume), failureRule{warningOnly: true, id: "server-sse-polling-session"}),
	"server-sse-multiple-streams":   {{warningOnly: true, id: "server-sse-multiple-streams-session"}},
}

func (r failureRule) matches(c check) bool {
	if r.warningOnly && c.Status != "WARNING" {
		return false
	}
	if r.id != "" && c.ID != r.id {
		return false
	}
	return r.msg == nil || r.msg.MatchString(c.ErrorMessage)
}

// check is one entry of a scenario's checks.json.
type check struct {
	ID           string `json:"id"`
	Status       string `json:"status"` // SUCCESS, FAILURE, WARNING, INFO, SKIPPED
	Description  string `json:"description"`
	ErrorMessage string `json:"errorMessage"`
}

// TestConformance runs every server scenario of the official conformance
// suite (--suite all: the active ones and the pending ones) against /mcp,
// with sessions and without, and holds the result to the committed
// baseline.
func TestConformance(t *testing.T) {
	tl := tools(t)
	t.Parallel()
	for _, mode := range []struct {
		name      string
		stateless bool
		baseline  string
	}{
		{"stateful", false, "testdata/conformance-baseline.yml"},
		{"stateless", true, "testdata/conformance-baseline-stateless.yml"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			baseline, err := filepath.Abs(mode.baseline)
			if err != nil {
				t.Fatal(err)
			}
			listed := readBaseline(t, baseline)
			srv := newServer(t, serverOpts{http: true, stateless: mode.stateless})
			out := t.TempDir()
			res := run(t, 3*time.Minute, tl.env(t), t.TempDir(), tl.node,
				tl.path("@modelcontextprotocol", "conformance", "dist", "index.js"),
				"server", "--url", srv.base+"/mcp", "--suite", "all", "--expected-failures", baseline, "-o", out)
			t.Logf("conformance ran in %v, exit %d", res.elapsed.Round(time.Millisecond), res.code)
			if res.code != 0 {
				t.Errorf("conformance exited %d, want 0 (baseline %s)\n%s", res.code, mode.baseline, summary(res.stdout))
			}

			results := readResults(t, out)
			for _, name := range genericScenarios {
				checks, ok := results[name]
				if !ok {
					t.Errorf("scenario %s did not run", name)
					continue
				}
				if !slices.ContainsFunc(checks, func(c check) bool { return c.Status == "SUCCESS" }) {
					t.Errorf("scenario %s passed no check: %+v", name, checks)
				}
				if slices.Contains(listed, name) {
					t.Errorf("generic scenario %s is in the baseline", name)
				}
			}
			for _, name := range listed {
				rules, ok := baselineRules[name]
				if !ok {
					t.Errorf("baseline lists %s, which has no failure rule in conformance_test.go", name)
					continue
				}
				checks, ok := results[name]
				if !ok {
					t.Errorf("baseline lists %s, which did not run", name)
				}
				for _, c := range checks {
					if c.Status != "FAILURE" && c.Status != "WARNING" {
						continue
					}
					if !slices.ContainsFunc(rules, func(r failureRule) bool { return r.matches(c) }) {
						t.Errorf("%s: check %s is %s for a reason the baseline does not give: %q", name, c.ID, c.Status, c.ErrorMessage+c.Description)
					}
				}
			}
			for name, checks := range results {
				if slices.Contains(listed, name) {
					continue
				}
				for _, c := range checks {
					if c.Status == "FAILURE" || c.Status == "WARNING" {
						t.Errorf("%s: check %s is %s: %s", name, c.ID, c.Status, c.ErrorMessage)
					}
				}
			}
			t.Logf("%d scenarios ran; %d expected failures", len(results), len(listed))
		})
	}
}

// readBaseline returns the scenarios a baseline lists under server:, and
// fails the test for an entry without a reason.
func readBaseline(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	inServer := false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "":
		case line == "server:":
			inServer = true
		case inServer && strings.HasPrefix(line, "  - "):
			entry, reason, _ := strings.Cut(strings.TrimPrefix(line, "  - "), "#")
			entry = strings.TrimSpace(entry)
			if strings.TrimSpace(reason) == "" {
				t.Errorf("%s: %s has no reason (write it after #)", filepath.Base(path), entry)
			}
			names = append(names, entry)
		default:
			t.Fatalf("%s: unexpected line %q", filepath.Base(path), line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return names
}

var resultDirRE = regexp.MustCompile(`^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$`)

// readResults reads every scenario's checks.json under the suite's output
// directory.
func readResults(t *testing.T, out string) map[string][]check {
	t.Helper()
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	results := map[string][]check{}
	for _, e := range entries {
		m := resultDirRE.FindStringSubmatch(e.Name())
		if m == nil {
			t.Errorf("unexpected result %s", e.Name())
			continue
		}
		b, err := os.ReadFile(filepath.Join(out, e.Name(), "checks.json"))
		if err != nil {
			t.Errorf("%s: %v", m[1], err)
			continue
		}
		var checks []check
		if err := json.Unmarshal(b, &checks); err != nil {
			t.Errorf("%s: checks.json: %v", m[1], err)
		}
		results[m[1]] = checks
	}
	return results
}

var ansiRE = regexp.MustCompile("\x1b\\[[0-9;]*m")

// summary returns the suite's output from its summary on, without colours.
func summary(stdout string) string {
	stdout = ansiRE.ReplaceAllString(stdout, "")
	if i := strings.Index(stdout, "=== SUMMARY ==="); i >= 0 {
		return stdout[i:]
	}
	return clip(stdout, 4000)
}

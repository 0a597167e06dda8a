package expert

import (
	"regexp"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// precommit and codereview answer in one shape: their roles ask Gemini to
// write each issue on a line of its own, "- [SEVERITY] …", and precommit
// to end with "VERDICT: GO" or "VERDICT: NO-GO". Their results then carry
// the issues (and the verdict) as structuredContent, under an
// outputSchema, beside the text. Lines not in that form are not issues;
// a verdict not given is "unknown": the shape holds on every backend,
// whatever the answer. The answer itself is in the text alone (paged
// there when it is long): the structured content holds what was read
// from it, and does not carry the answer a second time.

// Severities, from the most severe.
var severities = []string{"critical", "high", "medium", "low"}

// issueFormat is what the roles ask of each issue.
const issueFormat = "Write each issue on a line of its own, in the form `- [SEVERITY] path:line: the issue, and its fix`, " +
	"where SEVERITY is CRITICAL, HIGH, MEDIUM or LOW."

var (
	issueRE   = regexp.MustCompile(`(?mi)^[ \t]*(?:[-*+][ \t]+)?\**\[(critical|high|medium|low)\]\**[ \t]*(.*\S)[ \t]*$`)
	verdictRE = regexp.MustCompile(`(?mi)^[ \t#>*_]*verdict[*_]*[ \t]*:[ \t*_]*(no-go|go)\b[ \t*_]*(.*)$`)
)

// Issue is one issue of an answer.
type Issue struct {
	Severity string `json:"severity"`
	Text     string `json:"text"`
}

// maxIssues bounds the issues taken from one answer.
const maxIssues = 500

// issues are the issue lines of an answer, in order.
func issues(answer string) []Issue {
	out := []Issue{}
	for _, m := range issueRE.FindAllStringSubmatch(answer, maxIssues) {
		out = append(out, Issue{Severity: strings.ToLower(m[1]), Text: m[2]})
	}
	return out
}

// verdict is the last verdict line of an answer: "go" or "no-go" and the
// reason after it, or "unknown".
func verdict(answer string) (v, reason string) {
	ms := verdictRE.FindAllStringSubmatch(answer, -1)
	if len(ms) == 0 {
		return "unknown", ""
	}
	m := ms[len(ms)-1]
	reason = strings.TrimLeft(strings.TrimSpace(m[2]), "-—–:,. ")
	return strings.ToLower(m[1]), reason
}

// precommitStructured is precommit's structured content.
func precommitStructured(o *output) map[string]any {
	v, reason := verdict(o.answer.Text)
	by := "gemini"
	if v == "unknown" {
		by = "none"
	}
	secrets := o.secrets
	if len(secrets) > 0 {
		v, by, reason = "no-go", "server", "the changes add secrets"
	} else {
		secrets = []string{}
	}
	return map[string]any{
		"verdict": v, "verdictBy": by, "verdictReason": reason,
		"issues": issues(o.answer.Text), "secrets": secrets,
	}
}

// codereviewStructured is codereview's structured content.
func codereviewStructured(o *output) map[string]any {
	by := map[string][]string{}
	for _, s := range severities {
		by[s] = []string{}
	}
	for _, is := range issues(o.answer.Text) {
		by[is.Severity] = append(by[is.Severity], is.Text)
	}
	return map[string]any{"issues": by}
}

func str(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: desc}
}

func strList(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "array", Items: &jsonschema.Schema{Type: "string"}, Description: desc}
}

func enum(desc string, values ...string) *jsonschema.Schema {
	s := str(desc)
	for _, v := range values {
		s.Enum = append(s.Enum, v)
	}
	return s
}

// precommitOutput is precommit's outputSchema.
func precommitOutput() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:     "object",
		Required: []string{"verdict", "verdictBy", "verdictReason", "issues", "secrets"},
		Properties: map[string]*jsonschema.Schema{
			"verdict": enum("go or no-go; unknown when the answer gives no verdict line and the server found no secret.",
				"go", "no-go", "unknown"),
			"verdictBy":     enum("Who decided: gemini (its verdict line), server (secrets in the changes), none (unknown).", "gemini", "server", "none"),
			"verdictReason": str("The reason given with the verdict; may be empty."),
			"issues": {Type: "array", Description: "The issues of the answer, in its order.", Items: &jsonschema.Schema{
				Type:     "object",
				Required: []string{"severity", "text"},
				Properties: map[string]*jsonschema.Schema{
					"severity": enum("The issue's severity.", severities...),
					"text":     str("The issue: where, what, and its fix."),
				},
			}},
			"secrets": strList("The secrets the server's scan found in the changes, masked."),
		},
	}
}

// codereviewOutput is codereview's outputSchema.
func codereviewOutput() *jsonschema.Schema {
	by := &jsonschema.Schema{Type: "object", Required: severities, Properties: map[string]*jsonschema.Schema{},
		Description: "The issues of the answer by severity, each list in the answer's order."}
	for _, s := range severities {
		by.Properties[s] = strList("The " + s + " issues.")
	}
	return &jsonschema.Schema{
		Type:       "object",
		Required:   []string{"issues"},
		Properties: map[string]*jsonschema.Schema{"issues": by},
	}
}

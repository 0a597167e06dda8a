// Package secrets finds credentials about to be committed: it reads the
// lines a unified diff adds and reports each match of a documented set of
// patterns, with the file, the line in the new version and the kind, the
// secret itself masked.
//
// The patterns (Kinds lists them):
//   - private-key: a PEM private key block ("-----BEGIN … PRIVATE KEY-----"
//     for RSA, EC, DSA, OpenSSH, PGP, encrypted and PKCS#8 keys);
//   - aws-access-key-id: AKIA, ASIA, ABIA or ACCA and 16 upper-case
//     letters or digits;
//   - aws-secret-access-key: 40 base64 characters assigned to a name
//     containing aws and secret;
//   - github-token: ghp_, gho_, ghu_, ghs_, ghr_ and 36 characters, or a
//     fine-grained github_pat_ token;
//   - gitlab-token: glpat- and 20 or more characters;
//   - google-api-key: AIza and 35 characters;
//   - slack-token: xoxb-, xoxa-, xoxp-, xoxr-, xoxs- tokens, and Slack
//     incoming-webhook URLs;
//   - stripe-key: sk_live_ or rk_live_ keys;
//   - jwt: three base64url parts, the first two starting with eyJ (a JSON
//     object);
//   - password-assignment: a name ending in password, passwd, pwd,
//     secret, token, api_key, apikey, access_key or private_key (any case)
//     assigned (=, :, :=, =>) a quoted literal of 8 or more characters
//     without spaces; or, in the style of an environment file, an
//     upper-case NAME ending so, assigned an unquoted value of 8 or more
//     characters that is the whole rest of the line.
//
// False-positive guards: a value that is a placeholder (example, changeme,
// dummy, sample, placeholder, your…, xxx…, <…>, a run of one character),
// a reference to another value (${VAR}, $VAR, {{ … }}, %(…)s, process.env,
// os.Getenv), and AWS's documented example keys are not reported. An
// assignment compared with == is not an assignment.
package secrets

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Finding is one secret on an added line.
type Finding struct {
	File   string `json:"file"`
	Line   int    `json:"line"` // in the new version of the file, from 1
	Kind   string `json:"kind"`
	Masked string `json:"masked"` // the match up to the secret, the secret masked (a PEM header as it is)
}

// String renders a finding as "file:line: kind (masked)".
func (f Finding) String() string {
	return f.File + ":" + strconv.Itoa(f.Line) + ": " + f.Kind + " (" + f.Masked + ")"
}

type pattern struct {
	kind string
	re   string
	// group is the first submatch that may hold the secret: the first of
	// it and those after it that matched is the secret (0: the whole
	// match).
	group int
	// guarded applies the placeholder guards to the secret.
	guarded bool
	// marker says the match only marks where the secret is (the header of
	// a PEM block) and is shown as it is.
	marker bool
}

var patterns = []pattern{
	{kind: "private-key", re: `-----BEGIN (?:RSA |EC |DSA |OPENSSH |PGP |ENCRYPTED )?PRIVATE KEY(?: BLOCK)?-----`, marker: true},
	{kind: "aws-access-key-id", re: `\b((?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16})\b`, group: 1, guarded: true},
	{kind: "aws-secret-access-key", re: `(?i)aws.{0,20}secret.{0,20}?(?:=|:|:=|=>)\s*["']?([A-Za-z0-9/+]{40})(?:["'\s,;]|$)`, group: 1, guarded: true},
	{kind: "github-token", re: `\b((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{82})\b`, group: 1},
	{kind: "gitlab-token", re: `\b(glpat-[A-Za-z0-9_-]{20,})`, group: 1},
	{kind: "google-api-key", re: `\b(AIza[0-9A-Za-z_-]{35})(?:[^0-9A-Za-z_-]|$)`, group: 1, guarded: true},
	{kind: "slack-token", re: `\b(xox[abprs]-[0-9A-Za-z-]{10,})`, group: 1},
	{kind: "slack-token", re: `(https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]{16,})`, group: 1},
	{kind: "stripe-key", re: `\b((?:sk|rk)_live_[0-9A-Za-z]{20,})`, group: 1},
	{kind: "jwt", re: `\b(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,})`, group: 1},
	{kind: "password-assignment", re: `(?i)[a-z0-9_.-]*(?:password|passwd|pwd|secret|token|api_?key|access_?key|private_?key)["']?\s*(?:=|:=|:|=>)\s*(?:"([^"\s]{8,})"|'([^'\s]{8,})'|` + "`([^`\\s]{8,})`" + `)`, group: 1, guarded: true},
	{kind: "password-assignment", re: `^\s*(?:export\s+)?[A-Z0-9_]*(?:PASSWORD|PASSWD|SECRET|TOKEN|API_KEY|APIKEY|ACCESS_KEY|PRIVATE_KEY)\s*=\s*([A-Za-z0-9_\-+/=.@!%^&*~]{8,})\s*$`, group: 1, guarded: true},
}

type compiled struct {
	pattern
	re *regexp.Regexp
}

// The expressions are compiled on first use, not at start-up, which MCP
// clients wait for.
var compiledPatterns = sync.OnceValue(func() []compiled {
	out := make([]compiled, len(patterns))
	for i, p := range patterns {
		out[i] = compiled{p, regexp.MustCompile(p.re)}
	}
	return out
})

// Kinds returns the kinds of secret the patterns find, in order.
func Kinds() []string {
	var out []string
	for _, p := range patterns {
		if len(out) == 0 || out[len(out)-1] != p.kind {
			out = append(out, p.kind)
		}
	}
	return out
}

// ScanLine returns the findings in one line of text (File and Line unset).
func ScanLine(line string) []Finding {
	var out []Finding
	taken := map[string]bool{}
	for _, p := range compiledPatterns() {
		for _, m := range p.re.FindAllStringSubmatchIndex(line, -1) {
			start, end := m[0], m[1]
			if p.group > 0 {
				for g := p.group; 2*g+1 < len(m); g++ {
					if m[2*g] >= 0 {
						start, end = m[2*g], m[2*g+1]
						break
					}
				}
			}
			secret := line[start:end]
			if p.guarded && placeholder(secret) {
				continue
			}
			if taken[secret] {
				continue
			}
			taken[secret] = true
			masked := line[m[0]:start] + Mask(secret)
			if p.marker {
				masked = secret
			}
			out = append(out, Finding{Kind: p.kind, Masked: masked})
		}
	}
	return out
}

// Mask keeps the first 4 characters of a secret of 12 or more (its kind
// shows there: AKIA, ghp_) and replaces the rest with asterisks (at most
// 8, so that the length does not show either).
func Mask(s string) string {
	keep := 0
	if len(s) >= 12 {
		keep = 4
	}
	return s[:keep] + strings.Repeat("*", min(8, len(s)-keep))
}

var placeholderWords = []string{"example", "changeme", "change_me", "dummy", "sample", "placeholder", "redacted", "your", "fake", "xxxx", "****", "...", "<", ">", "${", "{{", "%(", "process.env", "getenv", "environ", "os.env"}

// placeholder reports whether a value is obviously not a real secret.
func placeholder(v string) bool {
	lower := strings.ToLower(v)
	for _, w := range placeholderWords {
		if strings.Contains(lower, w) {
			return true
		}
	}
	if strings.HasPrefix(v, "$") {
		return true
	}
	// A run of one character ("aaaaaaaa", "00000000").
	return strings.Count(v, v[:1]) == len(v)
}

// Package secrets finds credentials about to be committed: it reads the
// lines a unified diff adds and reports each match of a documented set of
// patterns, with the file, the line in the new version and the kind, the
// secret itself masked.
//
// It also keeps credentials from leaving the machine: Redact and
// RedactDiff withhold every line of a file or diff that holds a secret,
// and a private key block whole, from its header through its footer;
// CredentialFile names the files whose purpose is to hold credentials,
// which the file context does not send at all unless the operator asks.
//
// The patterns (Kinds lists them):
//   - private-key: a PEM private key block ("-----BEGIN … PRIVATE KEY-----"
//     for RSA, EC, DSA, OpenSSH, PGP, encrypted and PKCS#8 keys, and
//     SSH2's "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----");
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
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/msg"
)

// Finding is one secret on an added line.
type Finding struct {
	File   string `json:"file"`
	Line   int    `json:"line"` // in the new version of the file, from 1
	Kind   string `json:"kind"`
	Masked string `json:"masked"` // the match up to the secret, the secret masked (a PEM header as it is)
}

// String renders a finding as "file:line: kind (masked)", the file's name
// quoted when it needs to be (msg.QuoteName).
func (f Finding) String() string {
	return msg.QuoteName(f.File) + ":" + strconv.Itoa(f.Line) + ": " + f.Kind + " (" + f.Masked + ")"
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
	// hints are strings (lower case) one of which every match holds, in
	// any case: a line (or a text) without any of them is not searched,
	// which spares most lines every expression.
	hints []string
	// atHints says the expression is anchored (^) and tried where a hint
	// starts, the match then taken back over the name characters
	// ([A-Za-z0-9_.-]) before it: the same matches as the unanchored
	// expression with [a-z0-9_.-]* in front, without trying it at every
	// position of a line, which costs much in code where the hints
	// (token, secret) are common words.
	atHints bool
}

// keyNames are the hints of the password assignments: the names their
// expressions end in.
var keyNames = []string{"password", "passwd", "pwd", "secret", "token", "api_key", "apikey", "access_key", "accesskey", "private_key", "privatekey"}

var patterns = []pattern{
	{kind: "private-key", re: pemBeginRe, marker: true, hints: []string{"private key"}},
	{kind: "aws-access-key-id", re: `\b((?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16})\b`, group: 1, guarded: true, hints: []string{"akia", "asia", "abia", "acca"}},
	{kind: "aws-secret-access-key", re: `(?i)aws.{0,20}secret.{0,20}?(?:=|:|:=|=>)\s*["']?([A-Za-z0-9/+]{40})(?:["'\s,;]|$)`, group: 1, guarded: true, hints: []string{"aws"}},
	{kind: "github-token", re: `\b((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{82})\b`, group: 1, hints: []string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"}},
	{kind: "gitlab-token", re: `\b(glpat-[A-Za-z0-9_-]{20,})`, group: 1, hints: []string{"glpat-"}},
	{kind: "google-api-key", re: `\b(AIza[0-9A-Za-z_-]{35})(?:[^0-9A-Za-z_-]|$)`, group: 1, guarded: true, hints: []string{"aiza"}},
	{kind: "slack-token", re: `\b(xox[abprs]-[0-9A-Za-z-]{10,})`, group: 1, hints: []string{"xox"}},
	{kind: "slack-token", re: `(https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]{16,})`, group: 1, hints: []string{"hooks.slack.com"}},
	{kind: "stripe-key", re: `\b((?:sk|rk)_live_[0-9A-Za-z]{20,})`, group: 1, hints: []string{"_live_"}},
	{kind: "jwt", re: `\b(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,})`, group: 1, hints: []string{"eyj"}},
	{kind: "password-assignment", atHints: true, re: `(?i)^(?:password|passwd|pwd|secret|token|api_?key|access_?key|private_?key)["']?\s*(?:=|:=|:|=>)\s*(?:"([^"\s]{8,})"|'([^'\s]{8,})'|` + "`([^`\\s]{8,})`" + `)`, group: 1, guarded: true, hints: keyNames},
	{kind: "password-assignment", re: `^\s*(?:export\s+)?[A-Z0-9_]*(?:PASSWORD|PASSWD|SECRET|TOKEN|API_KEY|APIKEY|ACCESS_KEY|PRIVATE_KEY)\s*=\s*([A-Za-z0-9_\-+/=.@!%^&*~]{8,})\s*$`, group: 1, guarded: true, hints: keyNames},
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
	return scanLine(line, asciiLower(line), nil)
}

// scanLine is ScanLine given the line in lower case (asciiLower) and which
// patterns may match at all (activePatterns; nil: all of them).
func scanLine(line, lower string, active []bool) []Finding {
	var out []Finding
	var taken map[string]bool
	for i, p := range compiledPatterns() {
		if (active != nil && !active[i]) || !hinted(lower, p.hints) {
			continue
		}
		var matches [][]int
		if p.atHints {
			matches = p.matchAtHints(line, lower)
		} else {
			matches = p.re.FindAllStringSubmatchIndex(line, -1)
		}
		for _, m := range matches {
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
			if taken == nil {
				taken = map[string]bool{}
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

// matchAtHints returns the matches of an atHints pattern in line, as
// FindAllStringSubmatchIndex would.
func (p compiled) matchAtHints(line, lower string) [][]int {
	var pos []int
	for _, h := range p.hints {
		for off := 0; off < len(lower); {
			j := strings.Index(lower[off:], h)
			if j < 0 {
				break
			}
			pos = append(pos, off+j)
			off += j + 1
		}
	}
	slices.Sort(pos)
	var out [][]int
	end := 0
	for _, i := range slices.Compact(pos) {
		if i < end {
			continue
		}
		m := p.re.FindStringSubmatchIndex(line[i:])
		if m == nil {
			continue
		}
		for k := range m {
			if m[k] >= 0 {
				m[k] += i
			}
		}
		for m[0] > end && nameChar(line[m[0]-1]) {
			m[0]--
		}
		out = append(out, m)
		end = m[1]
	}
	return out
}

func nameChar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '-'
}

// hinted reports whether lower holds one of hints.
func hinted(lower string, hints []string) bool {
	for _, h := range hints {
		if strings.Contains(lower, h) {
			return true
		}
	}
	return false
}

// activePatterns says, for each pattern, whether its hints occur anywhere
// in a text (in lower case), so that the lines of a text need not be
// checked for the hints of patterns that cannot match in it.
func activePatterns(lower string) []bool {
	ps := compiledPatterns()
	active := make([]bool, len(ps))
	for i, p := range ps {
		active[i] = hinted(lower, p.hints)
	}
	return active
}

// asciiLower lower-cases the ASCII letters of s only, which keeps every
// byte where it was: a line's offsets are the same in both.
func asciiLower(s string) string {
	i := strings.IndexFunc(s, func(r rune) bool { return 'A' <= r && r <= 'Z' })
	if i < 0 {
		return s
	}
	b := []byte(s)
	for j := i; j < len(b); j++ {
		if c := b[j]; 'A' <= c && c <= 'Z' {
			b[j] = c + 'a' - 'A'
		}
	}
	return string(b)
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

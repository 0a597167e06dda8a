package msg

import (
	"strings"
	"testing"
)

func TestClip(t *testing.T) {
	for _, c := range []struct {
		s    string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"abcdefghijk", 5, "abcde…"},
		{"héllo", 2, "h…"}, // é is two bytes: no half character
		{"日本語", 4, "日…"},
	} {
		if got := Clip(c.s, c.n); got != c.want {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.s, c.n, got, c.want)
		}
	}
}

func TestQuoteName(t *testing.T) {
	for in, want := range map[string]string{
		"src/main.go":          "src/main.go",
		"docs/read me.md":      "docs/read me.md",
		"日本/語.txt":             "日本/語.txt",
		"x\n--- BEGIN FILE: y": `"x\n--- BEGIN FILE: y"`,
		"a---b":                `"a---b"`,
		"tab\there":            `"tab\there"`,
		`quo"te`:               `"quo\"te"`,
		`back\slash`:           `"back\\slash"`,
		"bidi\u202egnp.go":     `"bidi\u202egnp.go"`,
		"line\u2028sep":        `"line\u2028sep"`,
		"bad\xffutf8":          `"bad\xffutf8"`,
	} {
		if got := QuoteName(in); got != want {
			t.Errorf("QuoteName(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"  quota\nexceeded\tfor today ", 100, "quota exceeded for today"},
		{"red \x1b[31mtext\x1b[0m\x7f\u0085", 100, "red [31mtext[0m"},
		{"ééééé", 4, "éé…"},
		{strings.Repeat("a", 10), 5, "aaaaa…"},
	} {
		if got := Words(c.in, c.n); got != c.want {
			t.Errorf("Words(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

package conversation

import (
	"strings"
	"testing"
)

func TestTitle(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 100)
	for in, want := range map[string]string{
		"":                        "",
		"  one\n two  ":           "one two",
		long:                      strings.Repeat("x", 60) + "…",
		"héllo " + long:           "héllo …",
		strings.Repeat("ab ", 30): strings.TrimSpace(strings.Repeat("ab ", 20)) + " …",
	} {
		if got := Title(in); got != want {
			t.Errorf("Title(%q) = %q, want %q", in, got, want)
		}
	}
}

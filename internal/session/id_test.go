package session

import (
	"strings"
	"testing"
)

func TestNewUUID(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 100; i++ {
		u := NewUUID()
		if !IsUUID(u) || u[14] != '4' || !strings.ContainsRune("89ab", rune(u[19])) || seen[u] {
			t.Fatalf("bad or repeated uuid %q", u)
		}
		seen[u] = true
	}
}

func TestParseSessionRef(t *testing.T) {
	good := map[string]Ref{
		"B9AADB6C-5aca-4c65-b929-02b095cc2b94": {"b9aadb6c-5aca-4c65-b929-02b095cc2b94", RefUUID},
		" latest ":                             {"latest", RefLatest},
		"LATEST":                               {"latest", RefLatest},
		"1":                                    {"1", RefIndex},
		"250":                                  {"250", RefIndex},
	}
	for in, want := range good {
		got, err := ParseSessionRef(in)
		if err != nil || got != want {
			t.Errorf("ParseSessionRef(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", " ", "\n", "\t", "\u00a0", "0", "-1", "01", "b9aadb6c", "b9aadb6c-5aca-4c65-b929-02b095cc2b9", "--help", "latest; rm -rf /", "1e3", "9999999"} {
		if got, err := ParseSessionRef(in); err == nil {
			t.Errorf("ParseSessionRef(%q) = %+v, want an error", in, got)
		}
	}
}

func FuzzParseSessionRef(f *testing.F) {
	for _, s := range []string{"latest", "1", "gemini-2.5-pro", "-h", "b9aadb6c-5aca-4c65-b929-02b095cc2b94", "\x00", "../../etc"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ref, err := ParseSessionRef(s); err == nil {
			if strings.HasPrefix(ref.Value, "-") || strings.ContainsAny(ref.Value, " \t\n\x00=") {
				t.Fatalf("session ref %q could be read as a flag or split", ref.Value)
			}
			if ref.Kind == RefUUID && !IsUUID(ref.Value) {
				t.Fatalf("uuid ref %q", ref.Value)
			}
		}
	})
}

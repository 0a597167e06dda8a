package gemini

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseSessionRef(t *testing.T) {
	good := map[string]SessionRef{
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
	for _, in := range []string{"", "0", "-1", "01", "b9aadb6c", "b9aadb6c-5aca-4c65-b929-02b095cc2b9", "--help", "latest; rm -rf /", "1e3", "9999999"} {
		if got, err := ParseSessionRef(in); err == nil {
			t.Errorf("ParseSessionRef(%q) = %+v, want an error", in, got)
		}
	}
}

func TestValidateModel(t *testing.T) {
	for _, m := range []string{"gemini-2.5-pro", "gemini-3-flash", "gemini_x.1", "G"} {
		if err := ValidateModel(m); err != nil {
			t.Errorf("ValidateModel(%q): %v", m, err)
		}
	}
	for _, m := range []string{"", "-m", "--help", "a/b", "../x", "a b", "model\n", strings.Repeat("a", 101), "é"} {
		if err := ValidateModel(m); err == nil {
			t.Errorf("ValidateModel(%q) accepted", m)
		}
	}
}

func TestValidateText(t *testing.T) {
	if err := ValidateText("prompt", "hello", 10); err != nil {
		t.Fatal(err)
	}
	if err := ValidateText("prompt", "hello world", 10); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("size: %v", err)
	}
	if err := ValidateText("prompt", "a\x00b", 10); err == nil || !strings.Contains(err.Error(), "NUL") {
		t.Fatalf("NUL: %v", err)
	}
	if err := ValidateText("prompt", "a\xffb", 10); err == nil || !strings.Contains(err.Error(), "UTF-8") {
		t.Fatalf("UTF-8: %v", err)
	}
}

func TestResolveDir(t *testing.T) {
	base := t.TempDir()
	real, err := filepath.EvalSymlinks(base)
	if err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(real, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(real, "link")
	if err := os.Symlink(sub, link); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(real, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{sub: sub, "sub": sub, link: sub, sub + "/../sub/": sub} {
		got, err := ResolveDir(in, real)
		if err != nil || got != sub {
			t.Errorf("ResolveDir(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ResolveDir(filepath.Join(real, "missing"), real); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing: %v", err)
	}
	if _, err := ResolveDir(file, real); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("file: %v", err)
	}
	home, _ := os.UserHomeDir()
	if home != "" {
		if got, err := ResolveDir("~", real); err != nil || got == "" {
			t.Errorf("~: %q %v", got, err)
		}
	}
}

func FuzzValidateArgs(f *testing.F) {
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
		if ValidateModel(s) == nil {
			if strings.HasPrefix(s, "-") || strings.ContainsAny(s, "/ \t\n\x00?#%") {
				t.Fatalf("model %q accepted", s)
			}
		}
		if ValidateText("prompt", s, 1<<20) == nil && strings.IndexByte(s, 0) >= 0 {
			t.Fatalf("NUL accepted")
		}
	})
}

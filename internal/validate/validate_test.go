package validate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestValidateModel(t *testing.T) {
	for _, m := range []string{"gemini-2.5-pro", "gemini-3-flash", "gemini_x.1", "G"} {
		if err := Model(m); err != nil {
			t.Errorf("Model(%q): %v", m, err)
		}
	}
	for _, m := range []string{"", "-m", "--help", "a/b", "../x", "a b", "model\n", strings.Repeat("a", 101), "é"} {
		if err := Model(m); err == nil {
			t.Errorf("Model(%q) accepted", m)
		}
	}
}

func TestValidateText(t *testing.T) {
	if err := Text("prompt", "hello", 10); err != nil {
		t.Fatal(err)
	}
	if err := Text("prompt", "hello world", 10); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("size: %v", err)
	}
	if err := Text("prompt", "a\x00b", 10); err == nil || !strings.Contains(err.Error(), "NUL") {
		t.Fatalf("NUL: %v", err)
	}
	if err := Text("prompt", "a\xffb", 10); err == nil || !strings.Contains(err.Error(), "UTF-8") {
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
		if Model(s) == nil {
			if strings.HasPrefix(s, "-") || strings.ContainsAny(s, "/ \t\n\x00?#%") {
				t.Fatalf("model %q accepted", s)
			}
		}
		if Text("prompt", s, 1<<20) == nil && strings.IndexByte(s, 0) >= 0 {
			t.Fatalf("NUL accepted")
		}
	})
}

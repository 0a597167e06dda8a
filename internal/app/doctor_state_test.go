package app

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
)

// TestDoctorStateDirNotWritable checks that doctor fails (exit 1) on a
// state directory where the session store cannot be made: it lies under
// a regular file, which stops root as well as anyone.
func TestDoctorStateDirNotWritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(file, "state")
	cfg, err := config.Parse("test", "", []string{"--state-dir", state, "--cwd", t.TempDir()}, func(string) string { return "" }, io.Discard, configRules())
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	home := t.TempDir()
	getenv := func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}
	if code := Doctor(context.Background(), cfg, "test", &out, getenv); code != 1 {
		t.Fatalf("exit %d\n%s", code, out.String())
	}
	if !strings.Contains(out.String(), "FAIL  session store") || !strings.Contains(out.String(), "--state-dir") {
		t.Fatalf("no finding about the state directory:\n%s", out.String())
	}
}

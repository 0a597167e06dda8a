package app

import (
	"context"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctorCLIHome: doctor reads the CLI's settings where the CLI keeps
// them: under GEMINI_CLI_HOME, else HOME, else the user's home directory
// from the system's user database (as the CLI's Node does).
func TestDoctorCLIHome(t *testing.T) {
	u, err := user.Current()
	if err != nil || u.HomeDir == "" {
		t.Skipf("no home directory in the user database: %v", err)
	}
	// The process's own HOME is not the environment doctor was given.
	t.Setenv("HOME", "")
	cliHome, home := t.TempDir(), t.TempDir()
	for _, c := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"GEMINI_CLI_HOME", map[string]string{"GEMINI_CLI_HOME": cliHome, "HOME": home}, cliHome},
		{"HOME", map[string]string{"HOME": home}, home},
		{"neither", map[string]string{}, u.HomeDir},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := parse(t, "--state-dir", t.TempDir(), "--cwd", t.TempDir(), "--backend", "oneshot")
			var out strings.Builder
			Doctor(context.Background(), cfg, "test", &out, func(k string) string { return c.env[k] })
			want := filepath.Join(c.want, ".gemini", "settings.json")
			if !strings.Contains(out.String(), "to "+want+"\n") {
				t.Fatalf("doctor does not name %s:\n%s", want, out.String())
			}
		})
	}
}

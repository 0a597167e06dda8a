package app

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/gemini-mcp-server/gemini-mcp-server/internal/config"
)

// TestNewDepsAllowedRoots checks the roots' defaults: the server's cwd
// over HTTP, none on stdio, and the operator's list when given.
func TestNewDepsAllowedRoots(t *testing.T) {
	cwd, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	other, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"stdio", nil, nil},
		{"http", []string{"--http", "127.0.0.1:0"}, []string{cwd}},
		{"explicit", []string{"--http", "127.0.0.1:0", "--allowed-roots", other + "," + cwd}, []string{other, cwd}},
		{"stdio explicit", []string{"--allowed-roots", other}, []string{other}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"--cwd", cwd, "--state-dir", t.TempDir(), "--backend", "oneshot"}, c.args...)
			cfg, err := config.Parse("test", "", args, func(string) string { return "" }, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			deps, err := NewDeps(context.Background(), cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			defer deps.Backend.Close()
			defer deps.Store.Close()
			if len(deps.AllowedRoots) != len(c.want) || (c.want == nil) != (deps.AllowedRoots == nil) {
				t.Fatalf("roots %q, want %q", deps.AllowedRoots, c.want)
			}
			for i := range c.want {
				if deps.AllowedRoots[i] != c.want[i] {
					t.Fatalf("roots %q, want %q", deps.AllowedRoots, c.want)
				}
			}
		})
	}
	cfg, err := config.Parse("test", "", []string{"--state-dir", t.TempDir(), "--allowed-roots", filepath.Join(cwd, "missing")}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewDeps(context.Background(), cfg, slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("a missing root was accepted")
	}
}
